"""The upkeep side of the store facade: flushing, topics, arrival listeners, retention, runtime figures
and the hooks replication uses (the log's bytes for a slave, appending a master's bytes).

`StoreUpkeep` is the base of `MessageStore` (message_store.py), which sets the attributes declared here
and holds the write lock these methods take. Knows nothing of sockets, asyncio or request codes.
"""

from __future__ import annotations

import threading

from orbitmq.message.record import SCHEDULE_TOPIC
from orbitmq.store.commit import CommitService
from orbitmq.store.config import StoreConfig
from orbitmq.store.dispatch import ArrivalListener
from orbitmq.store.flush import FlushCallback, FlushService
from orbitmq.store.key_index import KeyIndex
from orbitmq.store.recovery import rebuild_topic_queue_table
from orbitmq.store.retention import CleanResult, Retention
from orbitmq.store.stats import StoreStats
from orbitmq.store.store_reads import StoreReads


class StoreUpkeep(StoreReads):
    config: StoreConfig
    retention: Retention
    stats: StoreStats
    committer: CommitService | None
    key_index: KeyIndex | None
    flusher: FlushService | None
    _write_lock: threading.RLock

    def _dispatch_deferred_locked(self) -> None:
        """Write and dispatch the deferred puts, the write lock held (MessageStore)."""
        raise NotImplementedError

    # ---- flushing (flush.py) ------------------------------------------------------------------
    def request_flush(self, end_offset: int, callback: FlushCallback) -> None:
        """Group commit: `callback(True)` from the flusher thread once the log is flushed to `end_offset`,
        `callback(False)` after `sync_flush_timeout` ms."""
        assert self.flusher is not None, "load() first"
        self.flusher.request_flush(end_offset, callback)

    def wait_flushed(self, end_offset: int, timeout: float | None = None) -> bool:
        """Block this thread until the log is flushed to `end_offset` (tools, tests; not for the loop)."""
        assert self.flusher is not None, "load() first"
        return self.flusher.wait_flushed(end_offset, timeout)

    def flush(self) -> int:
        """Flush the commit log now (blocking); returns the flushed offset."""
        assert self.flusher is not None, "load() first"
        return self.flusher.flush_commit_log(0)

    def flush_consume_queues(self) -> None:
        assert self.flusher is not None, "load() first"
        self.flusher.flush_consume_queues(0)

    # ---- topics, listeners, housekeeping --------------------------------------------------------
    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """`listener(topic, queue_id, new_max_offset, tags_code)` after each dispatch (loop thread)."""
        # Replaced, not changed in place: a dispatch iterating the old list is not disturbed.
        self.dispatcher.listeners = [*self.dispatcher.listeners, listener]

    def remove_arrival_listener(self, listener: ArrivalListener) -> None:
        """Stop calling `listener` (an equal bound method is the same listener); absent: nothing."""
        self.dispatcher.listeners = [known for known in self.dispatcher.listeners if known != listener]

    def delete_topics(self, topics: set[str]) -> None:
        """Drop the consume queues of `topics` (their records stay in the log until retention)."""
        with self._write_lock:
            self._dispatch_deferred_locked()
            self._delete_topics(topics)

    def _delete_topics(self, topics: set[str]) -> None:
        for topic in topics:
            self.queues.remove_topic(topic)
            for key in [k for k in self.commit_log.topic_queue_table if k[0] == topic]:
                del self.commit_log.topic_queue_table[key]

    def topics(self) -> set[str]:
        self.dispatch_deferred()
        return self.queues.topics()

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """`mqadmin cleanExpiredCQ` (DefaultMessageStore.cleanExpiredConsumerQueue): destroy every
        consume queue whose last record ends at or below the commit log's min offset (all it points at
        is gone), except SCHEDULE_TOPIC_XXXX's. As in RocketMQ the queue's next logical offset is
        forgotten too: a later message to it starts again at 0. Returns the (topic, queue id) removed."""
        removed: list[tuple[str, int]] = []
        with self._write_lock:
            self._dispatch_deferred_locked()
            min_phy = self.commit_log.min_offset
            for cq in self.queues.snapshot():
                # -1: created but never written (RocketMQ skips those too)
                if cq.topic == SCHEDULE_TOPIC or cq.max_physic_offset < 0 or cq.max_physic_offset > min_phy:
                    continue
                self.queues.remove_queue(cq.topic, cq.queue_id)
                self.commit_log.topic_queue_table.pop((cq.topic, cq.queue_id), None)
                removed.append((cq.topic, cq.queue_id))
        return removed

    def clean_expired_files(self, now_ms: int | None = None, *, force: bool = False) -> CleanResult:
        """Retention round (call every cleanResourceInterval); `now_ms` defaults to the store's clock;
        `force` ignores the deleteWhen hours (RocketMQ's manual delete)."""
        with self._write_lock:
            self._dispatch_deferred_locked()
            return self.retention.clean_expired_files(now_ms, force=force)

    def runtime_info(self) -> dict[str, str]:
        self.stats.sample()
        info = self.stats.as_dict()
        commit_log_ratio = self.retention.disk_usage(self.config.commit_log_dir)
        info.update(
            {
                "commitLogMinOffset": str(self.commit_log.min_offset),
                "commitLogMaxOffset": str(self.commit_log.max_offset),
                "commitLogDiskRatio": f"{commit_log_ratio:.4f}",
                "consumeQueueDiskRatio": f"{self.retention.disk_usage(self.config.consume_queue_dir):.4f}",
                "remainHowManyDataToFlush": str(self.commit_log.files.remaining_to_flush),
                "dispatchBehindBytes": str(self.dispatch_behind_bytes),
                "earliestMessageTimeStamp": str(self.get_earliest_store_time()),
                "remainTransientStoreBufferNumbs": (
                    str(self.committer.pool.available) if self.committer is not None else "0"
                ),
                "pageCacheLockTimeMills": "0",
                "putMessageEntireTimeMax": "0",
            }
        )
        return info

    # ---- HA hooks -------------------------------------------------------------------------------
    def get_commit_log_data(self, offset: int, max_bytes: int = 1 << 30) -> memoryview | None:
        """Log bytes from `offset` to the end of its segment's written data (HA master transfer)."""
        return self.commit_log.get_data_from(offset, max_bytes)

    def append_to_commit_log(self, start_offset: int, data: bytes | bytearray | memoryview) -> bool:
        """Append replicated bytes (slave) and dispatch the complete records; False if `start_offset`
        does not continue the log."""
        with self._write_lock:
            self._dispatch_deferred_locked()
            if not self.commit_log.append_data(start_offset, data):
                return False
            self.dispatcher.dispatch_from_log()
        # A slave's log timestamps come from the master's records (RocketMQ sets both on a slave).
        self.commit_log.last_store_timestamp = self.dispatcher.last_dispatched_timestamp
        return True

    def truncate_commit_log(self, offset: int) -> None:
        """Cut the log (and derived files) at `offset`: a replica whose tail the new master does not
        share (controller mode's epoch check) or a slave re-syncing behind its master."""
        with self._write_lock, self.commit_log.put_lock:
            self._dispatch_deferred_locked()
            self.dispatcher.flush_index()
            if self.committer is not None:
                self.committer.discard()
            self.commit_log.files.truncate_dirty_files(offset)
            for cq in self.queues.snapshot():
                cq.truncate_dirty_logic_files(offset)
            if self.key_index is not None:
                self.key_index.drop_files_beyond(offset)
            self.dispatcher.reput_offset = min(self.dispatcher.reput_offset, offset)
            rebuild_topic_queue_table(self.commit_log, self.queues)

    @property
    def confirm_offset(self) -> int:
        """The offset confirmed by replication (-1 until set): the HA engineer sets it."""
        return self.commit_log.confirm_offset

    @confirm_offset.setter
    def confirm_offset(self, value: int) -> None:
        self.commit_log.confirm_offset = value
