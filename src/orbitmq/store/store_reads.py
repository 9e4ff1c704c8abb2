"""The read side of the store facade (RocketMQ's DefaultMessageStore getters): messages of a queue from an
offset, queue offsets and store times, raw consume-queue entries, records by commit-log offset.

`StoreReads` is the base of `MessageStore` (message_store.py), its only subclass, which sets the
attributes declared here; the reads themselves live in reads.py (`ReadPath`) and in the consume queues.
This module knows nothing of sockets, asyncio or request codes.
"""

from __future__ import annotations

from collections.abc import Callable

from orbitmq.message.model import MessageExt
from orbitmq.message.record_decode import decode_record
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.consume_queue import CQ_ENTRY
from orbitmq.store.consume_queue_table import ConsumeQueueTable
from orbitmq.store.dispatch import Dispatcher
from orbitmq.store.reads import ReadPath
from orbitmq.store.results import GetMessageResult


class StoreReads:
    commit_log: CommitLog
    queues: ConsumeQueueTable
    dispatcher: Dispatcher
    reads: ReadPath

    def dispatch_deferred(self) -> None:
        """Dispatch the puts made with `dispatch_later` (MessageStore; cheap when there are none): every
        read of a consume queue calls it first, so no read sees the log ahead of its queues."""
        raise NotImplementedError

    def get_messages(  # noqa: PLR0917 -- the interface names these positionally
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        message_filter: Callable[[int], bool] | None = None,
        *,
        coalesce: bool = False,
    ) -> GetMessageResult:
        """`coalesce`: adjacent records as one view each (ReadPath.get_messages; the pull processor)."""
        self.dispatch_deferred()
        return self.reads.get_messages(
            group, topic, queue_id, offset, max_count, message_filter, coalesce=coalesce
        )

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        self.dispatch_deferred()
        cq = self.queues.find(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        self.dispatch_deferred()
        cq = self.queues.find(topic, queue_id)
        # RocketMQ creates the queue on lookup, so an unknown queue reports 0.
        return cq.min_offset if cq is not None else 0

    def read_consume_queue(
        self, topic: str, queue_id: int, offset: int, max_count: int
    ) -> list[tuple[int, int, int, int]]:
        """Up to `max_count` raw consume-queue entries from `offset`: (queue offset, commit log offset,
        size, tags code). For services that need the tags code itself, e.g. the delivery time of
        SCHEDULE_TOPIC_XXXX entries; stops at the end of the queue (or of a CQ file)."""
        self.dispatch_deferred()
        cq = self.queues.find(topic, queue_id)
        if cq is None or max_count <= 0:
            return []
        found = cq.index_buffer(max(offset, cq.min_offset))
        if found is None:
            return []
        view, count = found
        start = max(offset, cq.min_offset)
        out = []
        for i, (phy, size, tags) in enumerate(CQ_ENTRY.iter_unpack(view[: min(count, max_count) * 20])):
            out.append((start + i, phy, size, tags))
        return out

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        self.dispatch_deferred()
        return self.reads.offset_in_queue_by_time(topic, queue_id, timestamp_ms)

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        self.dispatch_deferred()
        cq = self.queues.find(topic, queue_id)
        entry = cq.entry(offset) if cq is not None else None
        if entry is None:
            return -1
        return self.reads.store_timestamp_at(entry[0], entry[1])

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        self.dispatch_deferred()
        cq = self.queues.find(topic, queue_id)
        if cq is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, cq.min_offset)

    def get_earliest_store_time(self) -> int:
        """Store time of the first message in the commit log (-1 if none)."""
        first = self.commit_log.files.first_file()
        if first is None or first.wrote_position == 0:
            return -1
        return self.reads.store_timestamp_at(first.file_from_offset, 0)

    def look_message_by_offset(self, physical_offset: int) -> MessageExt | None:
        view = self.select_one_message_by_offset(physical_offset)
        return decode_record(view) if view is not None else None

    def select_one_message_by_offset(self, physical_offset: int, size: int = 0) -> memoryview | None:
        return self.reads.record_at(physical_offset, size)

    def get_min_phy_offset(self) -> int:
        return self.commit_log.min_offset

    def get_max_phy_offset(self) -> int:
        return self.commit_log.max_offset

    @property
    def flushed_offset(self) -> int:
        return self.commit_log.files.flushed_where

    @property
    def dispatch_behind_bytes(self) -> int:
        self.dispatch_deferred()
        return max(0, self.commit_log.max_offset - self.dispatcher.reput_offset)
