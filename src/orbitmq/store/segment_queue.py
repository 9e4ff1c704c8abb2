"""MappedFileQueue: a directory of fixed-size segments forming one contiguous logical byte space.

Used by the commit log (1 GiB segments) and by every consume queue (6,000,000-byte segments). A file's
name is its start offset; the next file starts where the previous one ends. On load every file must have
the configured size (RocketMQ refuses to start otherwise) and counts as full until recovery sets the
write positions with `truncate_dirty_files`.

Pre-allocation ("allocate ahead"): when a queue with `preallocate=True` creates segment N it also creates
segment N+1, so rolling to the next file later only opens what exists. RocketMQ's
AllocateMappedFileService leaves the same kind of zero-filled next file, which recovery then treats as
empty. This module knows nothing of records.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Callable
from typing import Final

from orbitmq.common.errors import StoreError
from orbitmq.store.mapped_file import MappedFile, fsync_directory, segment_name

log: Final = logging.getLogger(__name__)


class MappedFileQueue:
    def __init__(
        self,
        directory: str,
        file_size: int,
        *,
        preallocate: bool = False,
        defer_dir_sync: bool = False,
    ) -> None:
        self.directory = directory
        self.file_size = file_size
        self.preallocate = preallocate
        # defer_dir_sync: a created segment's directory entry is made durable by the next flush (on the
        # flusher thread, before any of the segment's data counts as flushed) instead of at creation,
        # which for consume queues is on the broker's event loop, once per new queue.
        self.defer_dir_sync = defer_dir_sync
        self._dir_unsynced = False
        # Called with the segment size, and whether it is the one made ahead, before a segment is
        # created; raises to refuse it (the commit log's disk-space check, retention.check_room).
        self.space_guard: Callable[[int, bool], None] | None = None
        # Copy-on-write snapshot (start offsets for bisect, files): the flusher thread and readers take
        # one consistent pair with a single attribute read while the writer or retention replaces it.
        self._snap: tuple[list[int], list[MappedFile]] = ([], [])
        # The newest segment (None when there is none), kept with the snapshot: an append reaches it with
        # one attribute read instead of three (the snapshot, its list, the last item). With thousands of
        # consume queues each is cold in the CPU's cache when its next message comes.
        self.tail: MappedFile | None = None
        self._ahead: MappedFile | None = None
        self.flushed_where = 0
        # Longest run of zero bytes that can occur inside written data (see MappedFile.zero_from).
        self.zero_run_limit = 8 << 20

    # ---- loading --------------------------------------------------------------------------------
    def load(self) -> None:
        """Open every segment in the directory (sorted by name); each counts as full until recovered."""
        if not os.path.isdir(self.directory):
            return
        names = sorted(
            n
            for n in os.listdir(self.directory)
            if n.isdigit() and os.path.isfile(os.path.join(self.directory, n))
        )
        if names and self.file_size > 0:
            # A crash (kill -9, power cut) between creating the newest segment (O_EXCL) and sizing it
            # leaves it empty: it never held a byte, so it goes instead of failing the size check.
            newest = os.path.join(self.directory, names[-1])
            if os.path.getsize(newest) == 0:
                log.warning("removing %s: empty, its creation was interrupted by a crash", newest)
                os.unlink(newest)
                names.pop()
        files = [
            MappedFile(os.path.join(self.directory, name), self.file_size, create=False) for name in names
        ]
        self._set_files(files)
        for prev, cur in zip(self.files, self.files[1:], strict=False):
            if cur.file_from_offset != prev.file_tail_offset:
                raise StoreError(f"segments of {self.directory} are not contiguous at {cur.path}")

    @property
    def files(self) -> list[MappedFile]:
        """The segments, oldest first (a snapshot: do not mutate)."""
        return self._snap[1]

    def _set_files(self, files: list[MappedFile]) -> None:
        starts = [f.file_from_offset for f in files]
        self.tail = files[-1] if files else None
        self._snap = (starts, files)

    # ---- positions ------------------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        files = self._snap[1]  # one attribute read (this runs several times per put)
        return files[0].file_from_offset if files else 0

    @property
    def max_offset(self) -> int:
        """Offset just past the last written byte."""
        last = self.tail
        if last is None:
            return 0
        return last.file_from_offset + last.wrote_position

    def last_file(self) -> MappedFile | None:
        return self.tail

    @property
    def next_file(self) -> MappedFile | None:
        """The segment pre-allocated after the newest one (None without pre-allocation)."""
        return self._ahead

    def first_file(self) -> MappedFile | None:
        files = self._snap[1]
        return files[0] if files else None

    def find(self, offset: int) -> MappedFile | None:
        """The segment holding byte `offset`, or None if no loaded segment does."""
        starts, files = self._snap
        i = bisect.bisect_right(starts, offset) - 1
        if i < 0:
            return None
        f = files[i]
        return f if offset < f.file_tail_offset else None

    # ---- growth ---------------------------------------------------------------------------------
    def create_file(self, start_offset: int) -> MappedFile:
        """The segment starting at `start_offset` (rounded down to a file boundary), appended to the queue."""
        start = start_offset - start_offset % self.file_size
        if self.files and start != self.files[-1].file_tail_offset:
            raise StoreError(f"new segment {start} does not follow {self.files[-1].path}")
        ahead = self._ahead
        if ahead is not None and ahead.file_from_offset == start:
            f = ahead
            self._ahead = None
        else:
            if ahead is not None:
                ahead.destroy()
                self._ahead = None
            f = self._open_new(start)
        self._set_files([*self.files, f])
        if self.preallocate:
            try:
                self._ahead = self._open_new(f.file_tail_offset, ahead=True)
            except (OSError, StoreError) as exc:
                # Not fatal yet: the roll to that segment retries and reports the failure then.
                log.warning("cannot pre-allocate the segment after %s: %s", f.path, exc)
        return f

    def _open_new(self, start: int, *, ahead: bool = False) -> MappedFile:
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, segment_name(start))
        if os.path.exists(path):
            # Left over from a pre-allocation before a crash: only zero bytes can be there.
            f = MappedFile(path, self.file_size, create=False)
            f.zero_from(0)
            f.set_positions(0)
            return f
        if self.space_guard is not None:
            self.space_guard(self.file_size, ahead)
        f = MappedFile(path, self.file_size, create=True)
        if self.defer_dir_sync:
            self._dir_unsynced = True
        else:
            fsync_directory(self.directory)
        return f

    def last_file_for_append(self, start_offset: int = 0) -> MappedFile:
        """The segment to append to, creating the first or next one when the last is full or missing."""
        last = self.tail
        if last is None:
            return self.create_file(start_offset)
        if last.wrote_position >= last.file_size:  # is_full, inline
            return self.create_file(last.file_tail_offset)
        return last

    # ---- flushing -------------------------------------------------------------------------------
    def flush(self, least_pages: int = 0) -> bool:
        """Flush the segment holding `flushed_where` (and move on); True if nothing was left to flush."""
        if self._dir_unsynced:
            self._dir_unsynced = False  # cleared first: a segment created meanwhile sets it again
            fsync_directory(self.directory)
        f = self.find(self.flushed_where)
        if f is None:
            f = self.first_file() if self.flushed_where < self.min_offset else None
        if f is None:
            return True
        flushed = f.flush(least_pages)
        where = f.file_from_offset + flushed
        result = where == self.flushed_where
        self.flushed_where = where
        return result

    def flush_all(self) -> None:
        while True:
            before = self.flushed_where
            self.flush(0)
            if self.flushed_where == before or self.flushed_where >= self.max_offset:
                break
        # The segment just rolled past may still need its tail flushed (a blank record at its end).
        for f in self.files:
            if f.flushed_position < f.wrote_position:
                f.flush(0)

    @property
    def remaining_to_flush(self) -> int:
        return max(0, self.max_offset - self.flushed_where)

    # ---- truncation and deletion ----------------------------------------------------------------
    def truncate_dirty_files(self, offset: int) -> None:
        """Make `offset` the end: set its file's positions, zero the rest, delete later files."""
        keep: list[MappedFile] = []
        for f in self.files:
            if f.file_tail_offset > offset:
                if f.file_from_offset <= offset:
                    pos = offset - f.file_from_offset
                    f.zero_from(pos, self.zero_run_limit)
                    f.set_positions(pos)
                    keep.append(f)
                else:
                    f.destroy()
            else:
                keep.append(f)
        self._set_files(keep)
        self.flushed_where = offset

    def set_all_full_except_last(self) -> None:
        for f in self.files[:-1]:
            f.set_positions(self.file_size)

    def delete_first_files(self, should_delete: Callable[[MappedFile], bool], max_count: int) -> int:
        """Delete leading segments while `should_delete` says so (never the last one); returns how many."""
        files = self.files
        deleted = 0
        while deleted < max_count and len(files) - deleted > 1 and should_delete(files[deleted]):
            deleted += 1
        if deleted:
            self._set_files(files[deleted:])
            for f in files[:deleted]:
                f.destroy()
            fsync_directory(self.directory)
        return deleted

    def delete_all(self) -> None:
        for f in self.files:
            f.destroy()
        if self._ahead is not None:
            self._ahead.destroy()
            self._ahead = None
        self._set_files([])
        self.flushed_where = 0

    def close(self) -> None:
        for f in self.files:
            f.close()
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None
