"""The flusher: two threads that make the commit log, consume queues, index and checkpoint durable.

- SYNC_FLUSH (GroupCommitService): callers register `request_flush(end_offset, callback)`; the thread
  wakes, runs ONE fdatasync covering every request registered so far, then calls back True for each
  request whose end is now flushed. A request not satisfied within `sync_flush_timeout` is called back
  with False (the broker answers FLUSH_DISK_TIMEOUT). With no requests it still flushes every 10 ms
  (messages sent with WAIT=false).
  The broker's sends wait the cheaper way: `wanted.want(end_offset)` on the loop per send (compiled,
  flush_wanted.py: no lock, no callback; the sleeping thread is woken once per sleep), and one
  `flushed_listener(offset)` call per round that flushed past a wanted offset, which answers every
  send that round covered.
  Gathering: senders that wait for their answer come back together, spread over the time they take to
  send again. When the last round's sends came as such a burst, the thread, woken by the first of the
  next one, waits until as many have arrived (`wanted.want` wakes it at the count), at most as long as
  the last flush took and at most `group_commit_gather_max_micros`: one fdatasync then covers the whole
  burst. Started at once instead, it covered the first send or two, the rest arrived during it, and the
  round's answers waited for a second one. A lone sender (a burst of one) never waits.
- ASYNC_FLUSH (FlushRealTimeService): every `flush_interval_commit_log` ms, flush when at least
  `flush_commit_log_least_pages` dirty pages accumulated, or everything every
  `flush_commit_log_thorough_interval` ms.
- Consume queues (FlushConsumeQueueService), on a second thread as in RocketMQ: every
  `flush_interval_consume_queue` ms with `flush_consume_queue_least_pages`, thoroughly every
  `flush_consume_queue_thorough_interval` ms; then full index files and the checkpoint. On the commit
  log's thread these fdatasyncs (one per queue, index and checkpoint) held every group commit waiting
  behind them once a second, and SYNC_FLUSH sends with them.

Crash ordering: a checkpoint timestamp is captured before the flush of what it describes and written
only after that flush returned, so the checkpoint never claims more than is on disk.
Callbacks run on the flusher thread: callers must hand results to their own thread (the broker uses
loop.call_soon_threadsafe). This module is threading only; no asyncio.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from orbitmq.common.errors import StoreError
from orbitmq.store.checkpoint import StoreCheckpoint
from orbitmq.store.config import StoreConfig
from orbitmq.store.consume_queue_table import ConsumeQueueTable
from orbitmq.store.flush_wanted import FlushWanted
from orbitmq.store.key_index import KeyIndex
from orbitmq.store.segment_queue import MappedFileQueue

log = logging.getLogger(__name__)

FlushCallback = Callable[[bool], None]
_GROUP_COMMIT_WAIT = 0.010
_GATHER_STALE = 0.1  # s: a round started longer ago than this does not predict the next burst


class FlushService:
    def __init__(
        self,
        *,
        config: StoreConfig,
        commit_log_files: MappedFileQueue,
        last_store_timestamp: Callable[[], int],
        queues: ConsumeQueueTable,
        key_index: KeyIndex | None,
        checkpoint: StoreCheckpoint,
        last_dispatched_timestamp: Callable[[], int],
    ) -> None:
        if config.group_commit_gather_max_micros < 0:
            raise StoreError(
                f"groupCommitGatherMaxMicros must be at least 0, not {config.group_commit_gather_max_micros}"
            )
        self.config = config
        self.commit_log_files = commit_log_files
        self.last_store_timestamp = last_store_timestamp
        self.queues = queues
        self.key_index = key_index
        self.checkpoint = checkpoint
        self.last_dispatched_timestamp = last_dispatched_timestamp
        self._cond = threading.Condition()
        self._requests: list[tuple[int, FlushCallback, float]] = []
        # want()/flushed_listener: the highest end offset a waiting send needs, the flushed offset last
        # announced, and whether the thread is asleep (then want() wakes it; otherwise it will look).
        self.wanted = FlushWanted()
        self._announced = 0
        # Gathering: `wanted.sends` when the last round started, and how many sends came for it.
        self._round_sends = 0
        self._last_round_arrivals = 0
        self._round_started = 0.0
        self.flushed_listener: Callable[[int], None] | None = None
        self._thread: threading.Thread | None = None
        self._logics_thread: threading.Thread | None = None
        self._logics_wake = threading.Event()  # set by stop(): the logics thread's sleep ends at once
        self._running = False
        self._last_thorough_commit_log = time.monotonic()
        self._last_thorough_cq = time.monotonic()
        self.flush_count = 0  # fdatasync rounds of the commit log (group commit evidence)
        self.flush_seconds_total = 0.0
        self.flush_seconds_last = 0.0
        # One lock per thread's files, so the commit log's group commit never waits for a consume-queue
        # flush; each serializes its flushes with the final ones of shutdown.
        self.io_lock = threading.Lock()
        self.logics_lock = threading.Lock()

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._running = True
        self._logics_wake.clear()
        self._thread = threading.Thread(target=self._run, name="orbitmq-store-flusher", daemon=True)
        self._thread.start()
        self._logics_thread = threading.Thread(
            target=self._run_logics, name="orbitmq-store-logics-flusher", daemon=True
        )
        self._logics_thread.start()

    def stop(self, *, final_flush: bool = True) -> None:
        """Stop the thread after a last full flush (unless `final_flush` is False, as for a simulated
        crash); pending requests are answered."""
        thread = self._thread
        if thread is None:
            return
        with self._cond:
            self._running = False
            self._cond.notify_all()
        self._logics_wake.set()
        thread.join()
        self._thread = None
        if self._logics_thread is not None:
            self._logics_thread.join()
            self._logics_thread = None
        if final_flush:
            self.flush_commit_log(0)
        self._complete_requests(final=True)
        self._announce()

    # ---- requests -------------------------------------------------------------------------------
    def request_flush(self, end_offset: int, callback: FlushCallback) -> None:
        """`callback(True)` once an fdatasync covered `end_offset` (False after syncFlushTimeout). Its
        users: the broker's sends on a SYNC_MASTER with SYNC_FLUSH and CONSUMER_SEND_MSG_BACK on
        SYNC_FLUSH (send_waits.py; tests/crash/powerloss/test_sync_flush_paths.py), and wait_flushed."""
        if self.commit_log_files.flushed_where >= end_offset:
            callback(True)
            return
        deadline = time.monotonic() + self.config.sync_flush_timeout / 1000.0
        with self._cond:
            self._requests.append((end_offset, callback, deadline))
            self._cond.notify()

    def want(self, end_offset: int) -> None:
        """Make the next round flush through `end_offset`; `flushed_listener` hears of it. The loop's
        sends call `self.wanted.want` themselves (compiled) and `wake()` when it says so: under the GIL
        those reads and writes are ordered, and the thread sets `sleeping` before it looks at `wanted`
        under the condition's lock, so a wake-up is never lost."""
        if self.wanted.want(end_offset):
            self.wake()

    def wake(self) -> None:
        """Wake the sleeping thread (after `wanted.want` said it sleeps)."""
        with self._cond:
            self._cond.notify()

    def wait_flushed(self, end_offset: int, timeout: float | None = None) -> bool:
        """Block the calling thread until `end_offset` is flushed (tests, tools, the bench)."""
        done = threading.Event()
        outcome: list[bool] = []

        def cb(ok: bool) -> None:
            outcome.append(ok)
            done.set()

        self.request_flush(end_offset, cb)
        if self._thread is None:
            self.flush_commit_log(0)
            self._complete_requests(final=True)
        done.wait(timeout)
        return bool(outcome and outcome[0])

    # ---- flushing -------------------------------------------------------------------------------
    def flush_commit_log(self, least_pages: int) -> int:
        """Flush the commit log; returns the flushed offset. Updates the checkpoint's physic timestamp."""
        with self.io_lock:
            files = self.commit_log_files
            timestamp = self.last_store_timestamp()
            end = files.max_offset
            started = time.perf_counter()
            try:
                if least_pages == 0:
                    files.flush_all()
                else:
                    files.flush(least_pages)
            except (OSError, ValueError) as exc:  # a file deleted by retention under us
                log.warning("commit log flush failed: %s", exc)
            # Read by the metrics endpoint (one round per flush, not per message).
            self.flush_seconds_last = time.perf_counter() - started
            self.flush_seconds_total += self.flush_seconds_last
            self.flush_count += 1
            if files.flushed_where >= end and timestamp:
                self.checkpoint.physic_msg_timestamp = timestamp
            return files.flushed_where

    def flush_consume_queues(self, least_pages: int) -> None:
        with self.logics_lock:
            timestamp = self.last_dispatched_timestamp()
            for cq in self.queues.snapshot():
                if cq.destroyed:  # its topic was deleted after the snapshot
                    continue
                try:
                    if least_pages == 0:
                        cq.files.flush_all()
                    else:
                        cq.flush(least_pages)
                except (OSError, ValueError) as exc:
                    if not cq.destroyed:  # deleted while being flushed: nothing left to flush
                        log.warning("consume queue flush failed: %s", exc)
            if self.key_index is not None:
                for f in self.key_index.take_full_files():
                    try:
                        f.flush()
                        self.checkpoint.index_msg_timestamp = f.end_timestamp
                    except (OSError, ValueError) as exc:
                        log.warning("index flush failed: %s", exc)
                if least_pages == 0:
                    try:
                        self.key_index.flush_all()  # the current file too (not covered by the checkpoint)
                    except (OSError, ValueError) as exc:
                        log.warning("index flush failed: %s", exc)
            if timestamp:
                self.checkpoint.logics_msg_timestamp = timestamp
            self.checkpoint.flush()

    def _complete_requests(self, *, final: bool = False) -> None:
        with self._cond:
            requests, self._requests = self._requests, []
        if not requests:
            return
        flushed = self.commit_log_files.flushed_where
        now = time.monotonic()
        keep: list[tuple[int, FlushCallback, float]] = []
        for request in requests:
            end, callback, deadline = request
            if flushed >= end:
                self._call(callback, True)
            elif final or now >= deadline:
                self._call(callback, False)
            else:
                keep.append(request)
        if keep:
            with self._cond:
                self._requests = keep + self._requests

    def _announce(self) -> None:
        """Tell `flushed_listener` the flushed offset once it passed a wanted offset not yet announced."""
        listener = self.flushed_listener
        if listener is None or self.wanted.wanted <= self._announced:
            return
        flushed = self.commit_log_files.flushed_where
        if flushed > self._announced:
            self._announced = flushed
            try:
                listener(flushed)
            except Exception:
                log.exception("flushed listener failed")

    @staticmethod
    def _call(callback: FlushCallback, ok: bool) -> None:
        try:
            callback(ok)
        except Exception:
            log.exception("flush callback failed")

    # ---- the thread -----------------------------------------------------------------------------
    def _run(self) -> None:
        config = self.config
        files = self.commit_log_files
        wanted = self.wanted
        while True:
            with self._cond:
                wanted.sleeping = True  # before looking at `wanted`: see want()
                if not self._requests and wanted.wanted <= files.flushed_where:
                    interval = config.flush_interval_commit_log / 1000.0
                    self._cond.wait(_GROUP_COMMIT_WAIT if config.sync_flush else interval)
                wanted.sleeping = False
                running = self._running
            if not running:
                break
            if config.sync_flush and wanted.wanted > files.flushed_where:
                self._gather()
            try:
                self._round()
            except Exception:
                log.exception("flush round failed")

    def _gather(self) -> None:
        """Before a group commit: wait for the rest of a burst like the last round's (module doc)."""
        wanted = self.wanted
        start = self._round_sends
        # A burst long ago says nothing about this one (its senders come back within milliseconds).
        now = time.monotonic()
        expected = self._last_round_arrivals if now - self._round_started < _GATHER_STALE else 0
        limit = min(self.config.group_commit_gather_max_micros / 1e6, self.flush_seconds_last)
        if expected > 1 and limit > 0:
            with self._cond:
                # The mark first, then the count: a send counted in between sees the mark and wakes us
                # (its wake() waits for this lock, which the wait releases), so none is missed.
                wanted.gather_until = start + expected
                if self._running and wanted.sends < start + expected:
                    self._cond.wait(limit)
                wanted.gather_until = 0
        sends = wanted.sends
        self._last_round_arrivals = sends - start
        self._round_sends = sends
        self._round_started = now

    def _round(self) -> None:
        config = self.config
        now = time.monotonic()
        if config.sync_flush:
            self.flush_commit_log(0)
            self._complete_requests()
            self._announce()
        else:
            least = config.flush_commit_log_least_pages
            if self._requests or self.wanted.wanted > self._announced:
                least = 0  # someone waits (wait_flushed, a WAIT message on an ASYNC broker): flush all
            elif (now - self._last_thorough_commit_log) * 1000 >= config.flush_commit_log_thorough_interval:
                least = 0
                self._last_thorough_commit_log = now
            self.flush_commit_log(least)
            self._complete_requests()
            self._announce()

    def _run_logics(self) -> None:
        config = self.config
        while not self._logics_wake.wait(config.flush_interval_consume_queue / 1000.0):
            try:
                self._logics_round()
            except Exception:
                log.exception("consume queue flush round failed")

    def _logics_round(self) -> None:
        config = self.config
        now = time.monotonic()
        least = config.flush_consume_queue_least_pages
        if (now - self._last_thorough_cq) * 1000 >= config.flush_consume_queue_thorough_interval:
            least = 0
            self._last_thorough_cq = now
        self.flush_consume_queues(least)
