"""The commit step of the transient store pool (RocketMQ's CommitRealTimeService + MappedFile.commit).

With the pool active the commit log appends into a `BufferedSegment`: a pool buffer standing in for the
last segment's file mapping, with the same attributes the append path uses (`mm`, `wrote_position`,
`file_from_offset`, `file_size`, `store_timestamp`). `CommitService.commit` copies the bytes written but
not yet committed from the buffer into the segment's mapping and only then moves the segment's
`MappedFile.wrote_position`. So for everything that reads the log -- pulls, lookups, the HA master, the
flusher, recovery, `max_offset` -- a segment's `wrote_position` IS RocketMQ's committed (read) position;
only the commit log's writer knows the append position, which lives in the buffer.

Invariants:
- Only the last segment can hold uncommitted bytes: when its buffer is full (the 8-byte blank record
  written), the roll commits the rest of it before the next segment is used and gives the buffer back
  to the pool, where the next segment borrows it. Hence at most one buffer is borrowed at a time, and
  the log's max offset stays exactly the committed offset.
- A commit copies whole records: it runs under the store's write lock, between appends.
- Consume queues and the index are dispatched only for committed records: the write path's dispatch
  requests wait in `pending` until a commit covers them (`take_committed`).
- Crash ordering: nothing uncommitted is in any file; recovery is unchanged. `committed_store_timestamp`
  moves only after the bytes it describes are in the mapping, so the checkpoint never claims more.

This module knows nothing of consume queues, the index or threads: the store's writer calls it.
"""

from __future__ import annotations

import logging
import mmap
from collections import deque

from orbitmq.common.clock import Clock
from orbitmq.message.record_layout import BLANK_RECORD_SIZE, pack_blank_into
from orbitmq.store.config import StoreConfig
from orbitmq.store.dispatch import DispatchRequest
from orbitmq.store.mapped_file import OS_PAGE_SIZE, MappedFile
from orbitmq.store.segment_queue import MappedFileQueue
from orbitmq.store.transient_pool import TransientStorePool

log = logging.getLogger(__name__)


class BufferedSegment:
    """The writer's view of the last commit-log segment while its bytes go through a pool buffer."""

    __slots__ = (
        "committed_position",
        "file_from_offset",
        "file_size",
        "mapped",
        "mm",
        "store_timestamp",
        "wrote_position",
    )

    def __init__(self, mapped: MappedFile, buffer: mmap.mmap) -> None:
        self.mapped = mapped
        self.mm = buffer
        self.file_from_offset = mapped.file_from_offset
        self.file_size = mapped.file_size
        # Appending continues where the file's committed data ends (after recovery: its write position).
        self.wrote_position = mapped.wrote_position
        self.committed_position = mapped.wrote_position
        self.store_timestamp = mapped.store_timestamp

    @property
    def file_tail_offset(self) -> int:
        return self.file_from_offset + self.file_size

    @property
    def uncommitted(self) -> int:
        return self.wrote_position - self.committed_position

    def able_to_commit(self, least_pages: int) -> bool:
        """MappedFile.isAbleToCommit: a full segment always; else at least `least_pages` new pages."""
        wrote, committed = self.wrote_position, self.committed_position
        if wrote >= self.file_size:
            return wrote > committed
        if least_pages > 0:
            return wrote // OS_PAGE_SIZE - committed // OS_PAGE_SIZE >= least_pages
        return wrote > committed

    def commit_to(self, end: int, position_after: int) -> int:
        """Copy buffer bytes [committed, end) into the file mapping, then publish `position_after` as the
        segment's write position. Returns the bytes copied."""
        start = self.committed_position
        if end > start:
            source = memoryview(self.mm)
            try:
                self.mapped.mm[start:end] = source[start:end]
            finally:
                source.release()
        mapped = self.mapped
        mapped.store_timestamp = self.store_timestamp
        # Published after the copy: readers and the flusher bound themselves by this position.
        mapped.wrote_position = position_after
        self.committed_position = position_after
        return max(0, end - start)


class CommitService:
    """Commits pool buffers to the commit-log files and holds the dispatch requests waiting for it."""

    def __init__(
        self, config: StoreConfig, files: MappedFileQueue, pool: TransientStorePool, clock: Clock
    ) -> None:
        self.config = config
        self.files = files
        self.pool = pool
        self.clock = clock
        self.current: BufferedSegment | None = None
        self.pending: deque[DispatchRequest] = deque()
        self.committed_store_timestamp = 0
        self.committed_bytes_total = 0
        self.commit_count = 0
        self._last_commit = clock.monotonic()

    # ---- the append target ----------------------------------------------------------------------
    @property
    def committed_offset(self) -> int:
        return self.files.max_offset

    def append_target(self) -> BufferedSegment:
        """The buffered last segment, opening (and borrowing a buffer for) a new or recovered one."""
        current = self.current
        if current is not None and current.mapped is self.files.last_file():
            return current
        if current is not None:
            # The log was cut or its files replaced under us (never on a master in normal operation).
            log.warning("commit log segment %s changed under its write buffer", current.mapped.path)
            self._release(current)
        mapped = self.files.last_file_for_append(0)
        current = BufferedSegment(mapped, self.pool.borrow())
        self.current = current
        return current

    def segment_for(self, size: int, now: int) -> BufferedSegment:
        """The segment to append `size` bytes to, with room for the 8-byte minimum blank after them.

        When the current one lacks room, it is closed with the blank record, committed in full (so its
        file is complete before the next one is used), and the next segment takes over the buffer.
        Called by the commit log's append path under its put lock.
        """
        seg = self.append_target()
        remaining = seg.file_size - seg.wrote_position
        if remaining >= size + BLANK_RECORD_SIZE:
            return seg
        end = seg.wrote_position
        if remaining >= BLANK_RECORD_SIZE:
            pack_blank_into(seg.mm, end, remaining)
            end += BLANK_RECORD_SIZE
        seg.wrote_position = seg.file_size
        seg.store_timestamp = now
        self._commit_segment(seg, end, seg.file_size)
        self._release(seg)
        mapped = self.files.create_file(seg.file_tail_offset)
        current = BufferedSegment(mapped, self.pool.borrow())
        self.current = current
        return current

    def _release(self, seg: BufferedSegment) -> None:
        if self.current is seg:
            self.current = None
        self.pool.give_back(seg.mm)

    # ---- committing -----------------------------------------------------------------------------
    def _commit_segment(self, seg: BufferedSegment, end: int, position_after: int) -> int:
        copied = seg.commit_to(end, position_after)
        self.commit_count += 1
        self.committed_bytes_total += copied
        # The timestamp of the last committed record: every pending request ends at or before it.
        if self.pending:
            committed = self.committed_offset
            for request in reversed(self.pending):
                if request.physical_offset + request.size <= committed:
                    self.committed_store_timestamp = request.store_timestamp
                    break
        return copied

    def commit(self, least_pages: int = 0) -> int:
        """Commit the current segment if at least `least_pages` pages are pending (0: anything);
        returns the bytes committed."""
        seg = self.current
        if seg is None or not seg.able_to_commit(least_pages):
            return 0
        return self._commit_segment(seg, seg.wrote_position, seg.wrote_position)

    def commit_round(self, *, thorough: bool = False) -> int:
        """One CommitRealTimeService round: at least `commitCommitLogLeastPages` pages, or everything
        when `commitCommitLogThoroughInterval` ms passed since the last commit (or `thorough`)."""
        config = self.config
        now = self.clock.monotonic()
        least = config.commit_commit_log_least_pages
        elapsed_ms = round((now - self._last_commit) * 1000)  # rounded: float clocks drift by ulps
        if thorough or elapsed_ms >= config.commit_commit_log_thorough_interval:
            least = 0
            self._last_commit = now
        committed = self.commit(least)
        if committed:
            self._last_commit = self.clock.monotonic()
        return committed

    # ---- dispatch requests ----------------------------------------------------------------------
    def defer(self, requests: list[DispatchRequest]) -> None:
        self.pending.extend(requests)

    def take_committed(self) -> list[DispatchRequest]:
        """The pending requests whose records are now committed, in log order."""
        pending = self.pending
        if not pending:
            return []
        committed = self.committed_offset
        ready: list[DispatchRequest] = []
        while pending and pending[0].physical_offset + pending[0].size <= committed:
            ready.append(pending.popleft())
        return ready

    # ---- lifecycle ------------------------------------------------------------------------------
    def discard(self) -> None:
        """Drop what was not committed (a crash, or the log cut under us): buffer back, requests gone."""
        if self.current is not None:
            self._release(self.current)
        self.pending.clear()

    def close(self) -> None:
        self.discard()
        self.pool.close()
