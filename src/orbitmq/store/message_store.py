"""MessageStore: the one facade of the store engine (RocketMQ's DefaultMessageStore).

A synchronous library: the broker's event loop calls `put_message`/`get_messages` directly (they never
block on disk); one flusher thread does fdatasync (flush.py). One write lock serializes append and
dispatch, so consume queues stay in log order. A put is dispatched to its consume queue and the index in
the same call, unless the caller defers it (`dispatch_later`, `gather`: see put_message); every other
read and write dispatches deferred puts first, so nobody sees the log ahead of its queues. With the
transient store pool appends become visible only when `commit()` copies them into the segment file.
Reads: store_reads.py; flushing, topics, retention, replication hooks: store_upkeep.py. Files: fact sheet 6.1.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Final

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import StoreError
from orbitmq.message.hosts import pack_host
from orbitmq.store.batch_append import append_scanned, dispatch_run
from orbitmq.store.checkpoint import StoreCheckpoint
from orbitmq.store.commit import CommitService
from orbitmq.store.commit_log import CommitLog, SegmentCreateError
from orbitmq.store.config import SLAVE, SYNC_FLUSH, SYNC_MASTER, StoreConfig
from orbitmq.store.consume_queue_table import ConsumeQueueTable
from orbitmq.store.dir_lock import StoreDirLock
from orbitmq.store.dispatch import Dispatcher, DispatchRequest
from orbitmq.store.flush import FlushService
from orbitmq.store.key_index import KeyIndex
from orbitmq.store.page_prepare import PagePreparer
from orbitmq.store.paths import UnsafeNameError, child_dir
from orbitmq.store.reads import ReadPath
from orbitmq.store.recovery import recover
from orbitmq.store.recovery_progress import LoggingProgress, RecoveryProgress
from orbitmq.store.results import (
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
)
from orbitmq.store.retention import DiskUsage, Retention, disk_usage_ratio
from orbitmq.store.stats import StoreStats
from orbitmq.store.store_message import StoreBatch, StoreMessage
from orbitmq.store.store_upkeep import StoreUpkeep
from orbitmq.store.transient_pool import TransientStorePool, activation

log: Final = logging.getLogger(__name__)


class MessageStore(StoreUpkeep):
    def __init__(
        self,
        config: StoreConfig,
        *,
        clock: Clock = SYSTEM_CLOCK,
        store_host: tuple[str, int] = ("127.0.0.1", 10911),
        disk_usage: DiskUsage = disk_usage_ratio,
        recovery_progress: RecoveryProgress | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.store_host = store_host
        self.store_host_bytes = pack_host(*store_host)
        self.commit_log = CommitLog(config, clock, self.store_host_bytes)
        self.queues = ConsumeQueueTable(config.consume_queue_dir, config.consume_queue_file_size)
        self.key_index: KeyIndex | None = (
            KeyIndex(config.index_dir, config.max_hash_slot_num, config.max_index_num, clock)
            if config.message_index_enable
            else None
        )
        self.dispatcher = Dispatcher(
            self.commit_log.files,
            self.queues,
            self.key_index,
            self.commit_log.delay_levels_ms,
            self.commit_log.topic_queue_table,
        )
        self.stats = StoreStats(clock)
        self.retention = Retention(
            config, clock, self.commit_log, self.queues, self.key_index, disk_usage=disk_usage
        )
        self.commit_log.files.space_guard = self.retention.check_room  # (disk_space.py)
        self.queues.space_guard = self.retention.check_queue_file
        self.reads = ReadPath(config, self.commit_log, self.queues, self.key_index, self.stats)
        # The transient store pool: whether appends go through write buffers and a commit step.
        self.committer = None
        pool_active, ignored_because = activation(config)
        self.transient_store_pool_active = pool_active
        if pool_active:
            pool = TransientStorePool(config.transient_store_pool_size, config.mapped_file_size_commit_log)
            self.committer = CommitService(config, self.commit_log.files, pool, clock)
            self.commit_log.committer = self.committer
            log.info(
                "transient store pool active: %d buffers of %d bytes, commit every %d ms",
                config.transient_store_pool_size,
                config.mapped_file_size_commit_log,
                config.commit_interval_commit_log,
            )
        elif ignored_because:
            log.warning("transientStorePoolEnable=true is ignored: %s", ignored_because)
        self.checkpoint: StoreCheckpoint | None = None
        self.flusher = None
        if config.page_prepare_ahead_bytes < 0:
            raise StoreError(
                f"pagePrepareAheadBytes must be at least 0, not {config.page_prepare_ahead_bytes}"
            )
        # The commit log's next pages into the page cache from a thread of their own (page_prepare.py).
        self.page_preparer = PagePreparer(self.commit_log.files, config.page_prepare_ahead_bytes)
        self._dir_lock = StoreDirLock(config.store_path_root_dir, config.lock_path)
        self.recovery_progress = recovery_progress
        self._safe_topics: set[str] = set()
        self._write_lock = threading.RLock()
        # Single puts whose dispatch waits for `dispatch_deferred()` (put_message(..., dispatch_later=True),
        # allowed once `defer_dispatch_between_requests()` was called); see put_message.
        self._deferred: list[DispatchRequest] = []
        self._may_defer = False
        # Deferred single puts also leave their records unwritten until `write_pending()` (see
        # gather_writes_between_answers): set there, off under SYNC_FLUSH and with the transient pool.
        self._gather = False
        # One lock per put: the commit log's put lock is this write lock (re-entrant for retention,
        # commit and truncation, which take both).
        self.commit_log.put_lock = self._write_lock
        self._loaded = False
        self._running = False
        self._shutdown = False
        self.last_exit_ok = True

    # ---- lifecycle ------------------------------------------------------------------------------
    def load(self) -> bool:
        """Lock the directory, open every file and recover (fact sheet 6.7). Returns whether the last exit
        was clean. Raises StoreError if the directory is locked by another process or a file is corrupt."""
        config = self.config
        self._dir_lock.acquire()
        started = time.monotonic()
        try:
            self.last_exit_ok = not os.path.exists(config.abort_path)
            self.checkpoint = StoreCheckpoint(config.checkpoint_path)
            self.commit_log.files.load()
            self.queues.load()
            if self.key_index is not None:
                self.key_index.load(self.last_exit_ok, self.checkpoint.index_msg_timestamp)
            recover(
                commit_log=self.commit_log,
                queues=self.queues,
                key_index=self.key_index,
                dispatcher=self.dispatcher,
                checkpoint=self.checkpoint,
                last_exit_ok=self.last_exit_ok,
                check_crc=config.check_crc_on_recover,
                index_safe=config.message_index_safe,
                progress=self.recovery_progress
                or LoggingProgress(config.store_path_root_dir, time.monotonic),
                damage=self.reads.damage,
            )
            self.commit_log.last_store_timestamp = max(
                self.commit_log.last_store_timestamp, self.checkpoint.physic_msg_timestamp
            )
            if self.committer is not None:
                self.committer.committed_store_timestamp = self.commit_log.last_store_timestamp
            self.flusher = FlushService(
                config=config,
                commit_log_files=self.commit_log.files,
                last_store_timestamp=self._flushable_store_timestamp,
                queues=self.queues,
                key_index=self.key_index,
                checkpoint=self.checkpoint,
                last_dispatched_timestamp=lambda: self.dispatcher.last_dispatched_timestamp,
            )
        except BaseException:
            try:
                self._close_files()
            finally:
                self._release_lock()
            raise
        self._loaded = True
        if not self.commit_log.files.files:  # nothing was ever written here
            log.info("store %s created: a new, empty commit log", config.store_path_root_dir)
            return self.last_exit_ok
        # One line an operator can act on: was the last stop clean, and what did recovery cost.
        log.log(
            logging.INFO if self.last_exit_ok else logging.WARNING,
            "store %s recovered in %.2f s %s: commit log %d bytes, %d consume queues",
            config.store_path_root_dir,
            time.monotonic() - started,
            "after a normal stop" if self.last_exit_ok else "after a crash (abort file found)",
            self.commit_log.max_offset - self.commit_log.min_offset,
            len(self.queues.snapshot()),
        )
        return self.last_exit_ok

    def start(self) -> None:
        """Catch dispatch up, start the flusher and create the abort file (fact sheet 6.7 step 8)."""
        if not self._loaded:
            self.load()
        self.dispatcher.dispatch_from_log()
        assert self.flusher is not None
        self.flusher.start()
        self.page_preparer.start()
        with open(self.config.abort_path, "wb"):
            pass
        self.retention.check_disk()  # (started on a full disk: refuse writes from the first one on)
        self._running = True
        self.stats.sample()

    def shutdown(self) -> None:
        """Flush everything, write the checkpoint, remove the abort file (only if dispatch caught up)."""
        if self._shutdown or not self._loaded:
            return
        self._shutdown = True
        self._running = False
        self.page_preparer.stop()
        self.flush_index()  # (which dispatches deferred puts first)
        if self.committer is not None:
            self.commit(thorough=True)
        flusher = self.flusher
        if flusher is not None:
            flusher.stop()
            flusher.flush_commit_log(0)
            flusher.flush_consume_queues(0)
        caught_up = self.dispatcher.reput_offset >= self.commit_log.max_offset
        end = self.commit_log.max_offset
        self._close_files()
        if self.committer is not None:
            self.committer.close()
        if caught_up:
            try:
                os.unlink(self.config.abort_path)
            except FileNotFoundError:
                pass
        self._release_lock()
        log.info(
            "store %s stopped cleanly (flushed to offset %d)%s",
            self.config.store_path_root_dir,
            end,
            "" if caught_up else "; dispatch lagged, the next start recovers as after a crash",
        )

    def abort(self) -> None:
        """Stop without the clean-shutdown steps (the abort file stays): what a crash leaves behind.

        Used by tests and tools to exercise abnormal recovery in-process."""
        if self._shutdown:
            return
        self._shutdown = True
        self._running = False
        self.page_preparer.stop()
        if self.flusher is not None:
            self.flusher.stop(final_flush=False)
        self._close_files()
        if self.committer is not None:
            self.committer.close()  # the uncommitted bytes are lost, as in a crash
        self._release_lock()

    def _close_files(self) -> None:
        self.commit_log.files.close()
        self.queues.close()
        if self.key_index is not None:
            self.key_index.close()
        if self.checkpoint is not None:
            self.checkpoint.close()

    def _release_lock(self) -> None:
        self._dir_lock.release()

    # ---- write path -----------------------------------------------------------------------------
    def _refuse(self) -> PutMessageResult | None:
        if not self._running:
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is not running"
            )
        if self.config.broker_role == SLAVE:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="the broker role is slave")
        if self.retention.disk_full:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="the disk is full")
        return None

    def _unsafe_topic(self, topic: str) -> PutMessageResult | None:
        """MESSAGE_ILLEGAL for a topic whose consume queue would live outside the store (checked once per
        topic: the dispatcher must never meet such a record after it is in the log)."""
        try:
            child_dir(self.config.consume_queue_dir, topic)
        except UnsafeNameError as exc:
            return self._failed(PutMessageStatus.MESSAGE_ILLEGAL, str(exc))
        if len(self._safe_topics) >= 65536:
            self._safe_topics.clear()
        self._safe_topics.add(topic)
        return None

    def put_message(
        self, msg: StoreMessage, *, dispatch_later: bool = False, gather: bool = False
    ) -> PutMessageResult:
        """Append one message and dispatch it to its consume queue and the key index -- at once, or with
        `dispatch_later` (honoured once `defer_dispatch_between_requests()` was called) at the next
        `dispatch_deferred()`, which the caller makes before anything else runs on its thread: the
        broker answers the send first (the record is in the page cache then, so the answer survives a
        crash of the process) and dispatches at the end of the turn, before its next read. Every read
        and write of the store dispatches deferred puts first, so none of them sees the log ahead of
        the consume queues. With `gather` too (honoured once `gather_writes_between_answers()` was
        called, and not on a SYNC_MASTER), the record itself waits for `write_pending()`, which the
        caller makes before the answer leaves; until then the log's written end does not include it."""
        # (the per-message path: _refuse's checks inline first, its call only when one of them trips)
        if (
            not self._running
            or self.config.broker_role == SLAVE
            or (self.retention.watch and not self.retention.may_put(msg.topic, msg.queue_id, 1))
        ):
            refused = self._refuse()
            if refused is not None:
                return refused
        if msg.topic not in self._safe_topics:
            unsafe = self._unsafe_topic(msg.topic)
            if unsafe is not None:
                return unsafe
        # Append and dispatch under one lock: consume-queue entries must be written in log order even
        # if several threads put (the broker's loop is one writer; tools and benches may be more).
        # (acquire/release, not `with`: compiled, a with-statement looks up and binds __enter__/__exit__)
        lock = self._write_lock
        lock.acquire()
        try:
            # A gathered put leaves its record with the ones before it, for one write (SYNC_MASTER waits for
            # its slave at once: not gathered); any other put writes and dispatches what waits first.
            gather = gather and dispatch_later and self._gather and self.config.broker_role != SYNC_MASTER
            if not gather:
                self._dispatch_deferred_locked()  # (consume-queue entries in log order)
            try:
                result, requests = self.commit_log.put(msg, gather=gather)
            except SegmentCreateError as exc:
                return self._failed(PutMessageStatus.CREATE_MAPEDFILE_FAILED, str(exc))
            except (OSError, ValueError, StoreError) as exc:
                log.exception("put failed")
                return self._failed(PutMessageStatus.UNKNOWN_ERROR, str(exc))
            if self.committer is None and result.ok:  # _after_put's common case, inline
                if dispatch_later and self._may_defer:
                    self._deferred.append(requests[0])
                else:
                    self.dispatcher.dispatch(requests)
                stats = self.stats
                stats.put_message_times_total += result.msg_num
                stats.put_message_size_total += result.wrote_bytes
                return result
            return self._after_put(result, requests)
        finally:
            lock.release()

    def put_messages(self, batch: StoreBatch) -> PutMessageResult:
        if self.retention.watch:  # (a queue without room marks the disk full: refused below)
            count = batch.scanned.count if batch.scanned is not None else len(batch.entries)
            self.retention.queue_has_room(batch.topic, batch.queue_id, count)
        refused = self._refuse()
        if refused is not None:
            return refused
        if batch.topic not in self._safe_topics:
            unsafe = self._unsafe_topic(batch.topic)
            if unsafe is not None:
                return unsafe
        scanned = batch.scanned
        if scanned is not None and self.committer is not None:
            # The transient store pool dispatches at commit: that path takes the batch as objects.
            batch = StoreBatch(
                batch.topic,
                batch.queue_id,
                batch.sys_flag,
                batch.born_timestamp,
                batch.born_host,
                scanned.entries(),
                batch.properties,
                batch.reconsume_times,
            )
            scanned = None
        with self._write_lock:
            self._dispatch_deferred_locked()  # (consume-queue entries in log order)
            try:
                if scanned is not None:
                    result, run = append_scanned(self.commit_log, batch, scanned)
                    if run is None:
                        return self._after_put(result, [])
                    dispatch_run(self.dispatcher, run)
                    self.stats.put_message_times_total += result.msg_num
                    self.stats.put_message_size_total += result.wrote_bytes
                    return result
                result, requests = self.commit_log.put_batch(batch)
            except SegmentCreateError as exc:
                return self._failed(PutMessageStatus.CREATE_MAPEDFILE_FAILED, str(exc))
            except (OSError, ValueError, StoreError) as exc:
                log.exception("batch put failed")
                return self._failed(PutMessageStatus.UNKNOWN_ERROR, str(exc))
            return self._after_put(result, requests)

    def _failed(self, status: PutMessageStatus, remark: str) -> PutMessageResult:
        self.stats.put_message_failed_times += 1
        if status is PutMessageStatus.CREATE_MAPEDFILE_FAILED and self.retention.disk_full:
            status = PutMessageStatus.SERVICE_NOT_AVAILABLE  # refused for lack of disk space
        return PutMessageResult(status, remark=remark)

    def _after_put(self, result: PutMessageResult, requests: list[DispatchRequest]) -> PutMessageResult:
        stats = self.stats
        if result.ok:
            committer = self.committer
            if committer is None:
                self.dispatcher.dispatch(requests)
            else:
                # Dispatched at commit; a segment roll in this put may have committed earlier records.
                committer.defer(requests)
                self.dispatcher.dispatch(committer.take_committed())
            stats.put_message_times_total += result.msg_num
            stats.put_message_size_total += result.wrote_bytes
        else:
            stats.put_message_failed_times += 1
        return result

    def defer_dispatch_between_requests(self) -> None:
        """Allow put_message(..., dispatch_later=True): the caller promises to call `dispatch_deferred()`
        after each request that may have put one, before its thread runs anything else."""
        self._may_defer = True

    def gather_writes_between_answers(self) -> None:
        """Let deferred single puts (ASYNC_FLUSH, no transient store pool) gather their records for one
        vectored write: the caller also promises to call `write_pending()` before any answer leaves (an
        answer says its record is in the page cache) and `dispatch_deferred()` before its thread runs
        anything else. Every read and other write of the store writes them first, and the log's written
        end (what the flusher syncs and replication sends) moves only when they are written."""
        self._may_defer = True
        self._gather = self.committer is None and self.config.flush_disk_type != SYNC_FLUSH

    def write_pending(self) -> None:
        """Write the gathered records now (cheap when there are none)."""
        if self.commit_log.pending_bytes:
            lock = self._write_lock
            lock.acquire()
            try:
                self.commit_log.write_pending()
            finally:
                lock.release()

    def dispatch_deferred(self) -> None:
        """Write and dispatch the puts made with `dispatch_later` (cheap when there are none)."""
        if self._deferred or self.commit_log.pending_bytes:
            with self._write_lock:
                self._dispatch_deferred_locked()

    def _dispatch_deferred_locked(self) -> None:
        self.commit_log.write_pending()  # (the consume queues never point past the written log)
        if self._deferred:
            requests, self._deferred = self._deferred, []
            self.dispatcher.dispatch(requests)

    def defer_index_to(self, schedule: Callable[[Callable[[], None]], object]) -> None:
        """Write key-index entries of single puts later, in one batch: `schedule(fn)` is called when the
        first entry is deferred and must call `fn` soon on the writer's thread (the broker passes a 10 ms
        loop timer, so the index is written in batches after the responses left). Queries, batches,
        truncation and shutdown write the deferred entries first."""
        self.dispatcher.defer_index = lambda: schedule(self.flush_index)

    def flush_index(self) -> None:
        """Write the deferred key-index entries now."""
        with self._write_lock:
            self._dispatch_deferred_locked()
            self.dispatcher.flush_index()

    def commit(self, *, thorough: bool = False) -> int:
        """Transient store pool: one commit round (CommitRealTimeService) -- copy the buffered bytes to
        the segment file when at least `commitCommitLogLeastPages` pages are pending, or all of them when
        `commitCommitLogThoroughInterval` ms passed (or `thorough`), then dispatch the committed records.
        Returns the bytes committed (always 0 without the pool). Call it from the writer's thread."""
        committer = self.committer
        if committer is None or not self._loaded:
            return 0
        with self._write_lock, self.commit_log.put_lock:
            self._dispatch_deferred_locked()
            committed = committer.commit_round(thorough=thorough)
            self.dispatcher.dispatch(committer.take_committed())
        return committed

    def _flushable_store_timestamp(self) -> int:
        # The checkpoint's physic timestamp may only name committed (hence flushable) records.
        if self.committer is not None:
            return self.committer.committed_store_timestamp
        return self.commit_log.last_store_timestamp

    # ---- read path: store_reads.py (StoreReads), and query_message -----------------------------
    def query_message(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int
    ) -> QueryMessageResult:
        if self.dispatcher.index_pending or self._deferred:
            self.flush_index()
        return self.reads.query_message(topic, key, max_num, begin_ms, end_ms)
