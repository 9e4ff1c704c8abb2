"""Rebalance (RebalanceImpl): which queues this consumer owns, and the start offset of a new one.

For every subscribed topic: all queues in BROADCASTING; in CLUSTERING the allocation strategy's share
of the sorted queues among the group's sorted client ids (fact sheet 11). Queues no longer owned are
handed back to the owner (`on_removed`, which persists their offset first) and new ones are announced
with the offset to start from (fact sheet 7.5: committed offset, else LAST/FIRST/TIMESTAMP rules).
Orderly consumers lock a queue on its master broker before taking it (fact sheet 7.9).

Shared by the push and the lite-pull consumer; it knows nothing of how messages are pulled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from orbitmq.client.allocation import AllocateStrategy
from orbitmq.client.offset_store import OffsetStore, ReadOffsetType
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.results import ConsumeFromWhere, MessageModel
from orbitmq.client.subscription import Subscription
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.message.model import MessageQueue

if TYPE_CHECKING:
    from orbitmq.client.instance import ClientInstance

log = logging.getLogger("orbitmq.client")

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


class Rebalancer:
    def __init__(
        self,
        *,
        group: str,
        message_model: MessageModel,
        strategy: AllocateStrategy,
        instance: ClientInstance,
        offset_store: OffsetStore,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp_ms: int = 0,
        orderly: bool = False,
        on_added: Callable[[MessageQueue, ProcessQueue, int], Awaitable[None]],
        on_removed: Callable[[MessageQueue, ProcessQueue], Awaitable[bool]],
        on_changed: Callable[[str, list[MessageQueue], list[MessageQueue]], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.group = group
        self.message_model = message_model
        self.strategy = strategy
        self.instance = instance
        self.offset_store = offset_store
        self.consume_from_where = consume_from_where
        self.consume_timestamp_ms = consume_timestamp_ms
        self.orderly = orderly
        self.on_added = on_added
        self.on_removed = on_removed
        self.on_changed = on_changed
        self.clock = clock
        self.subscriptions: dict[str, Subscription] = {}
        self.topic_queues: dict[str, list[MessageQueue]] = {}
        self.process_queues: dict[MessageQueue, ProcessQueue] = {}
        # One round at a time: a round awaits brokers, and two overlapping rounds would both add a queue.
        self._round = asyncio.Lock()

    # ---- the round --------------------------------------------------------------------------

    async def do_rebalance(self) -> None:
        async with self._round:
            await self._do_rebalance()

    async def _do_rebalance(self) -> None:
        for topic in list(self.subscriptions):
            try:
                await self.rebalance_topic(topic)
            except Exception:
                log.exception("%s: rebalance of topic %s failed", self.group, topic)
        for mq in [mq for mq in self.process_queues if mq.topic not in self.subscriptions]:
            pq = self.process_queues[mq]
            pq.dropped = True
            if await self.on_removed(mq, pq):
                del self.process_queues[mq]

    async def rebalance_topic(self, topic: str) -> None:
        mqs = self.topic_queues.get(topic)
        if mqs is None:
            log.debug("%s: no route for %s yet", self.group, topic)
            return
        if self.message_model is MessageModel.BROADCASTING:
            allocated = list(mqs)
        else:
            if not mqs:
                return
            cids = await self.instance.find_consumer_ids(topic, self.group)
            if not cids:
                log.debug("%s: no consumer ids for %s", self.group, topic)
                return
            allocated = self.strategy.allocate(self.group, self.instance.client_id, sorted(mqs), sorted(cids))
        if await self.update_process_queues(topic, set(allocated)) and self.on_changed is not None:
            self.on_changed(topic, list(mqs), sorted(allocated))

    async def update_process_queues(self, topic: str, allocated: set[MessageQueue]) -> bool:
        changed = False
        for mq, pq in list(self.process_queues.items()):
            if mq.topic != topic:
                continue
            if mq not in allocated or pq.is_pull_expired():
                pq.dropped = True
                if await self.on_removed(mq, pq):
                    del self.process_queues[mq]
                    changed = True
        for mq in sorted(allocated):
            if mq in self.process_queues:
                continue
            if self.orderly and self.message_model is MessageModel.CLUSTERING and not await self.lock(mq):
                log.debug("%s: %s is locked by another consumer; not taken this round", self.group, mq)
                continue
            self.offset_store.remove_offset(mq)  # drop whatever a previous owner left in memory
            offset = await self.compute_pull_from_where(mq)
            if offset < 0:
                log.debug("%s: no start offset for %s this round", self.group, mq)
                continue
            pq = ProcessQueue(self.clock)
            if self.orderly:
                pq.mark_locked()
            self.process_queues[mq] = pq
            changed = True
            await self.on_added(mq, pq, offset)
        return changed

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """The committed offset, else the start the consumer was configured with (-1: try next round)."""
        last = await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
        if last >= 0:
            return last
        if last != -1:
            return -1
        is_retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        where = self.consume_from_where
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if is_retry and where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
            return 0
        addr = await self.instance.find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            return -1
        try:
            if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP and not is_retry:
                return await self.instance.api.search_offset(addr, mq, self.consume_timestamp_ms)
            return await self.instance.api.get_max_offset(addr, mq)
        except Exception as exc:
            log.debug("%s: start offset of %s unknown: %s", self.group, mq, exc)
            return -1

    # ---- orderly locks ----------------------------------------------------------------------

    async def lock(self, mq: MessageQueue) -> bool:
        addr = await self.instance.find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            return False
        try:
            locked = await self.instance.api.lock_batch_mq(addr, self.group, self.instance.client_id, [mq])
        except Exception as exc:
            log.debug("%s: lock of %s failed: %s", self.group, mq, exc)
            return False
        pq = self.process_queues.get(mq)
        if mq in locked:
            if pq is not None:
                pq.mark_locked()
            return True
        if pq is not None:
            pq.locked = False
        return False

    async def lock_all(self) -> None:
        """Renew the locks of every owned queue, one request per broker (every 20 s)."""
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in self.process_queues:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for broker_name, mqs in by_broker.items():
            addr = await self.instance.find_master_address(broker_name, mqs[0].topic)
            if addr is None:
                continue
            try:
                locked = await self.instance.api.lock_batch_mq(addr, self.group, self.instance.client_id, mqs)
            except Exception as exc:
                log.debug("%s: lock renewal on %s failed: %s", self.group, broker_name, exc)
                continue
            for mq in mqs:
                pq = self.process_queues.get(mq)
                if pq is None:
                    continue
                if mq in locked:
                    pq.mark_locked()
                else:
                    pq.locked = False

    async def unlock(self, mqs: Iterable[MessageQueue]) -> None:
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for broker_name, group_mqs in by_broker.items():
            addr = self.instance.master_address(broker_name)
            if addr is None:
                continue
            try:
                await self.instance.api.unlock_batch_mq(addr, self.group, self.instance.client_id, group_mqs)
            except Exception as exc:
                log.debug("%s: unlock on %s failed: %s", self.group, broker_name, exc)
