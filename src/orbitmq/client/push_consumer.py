"""The asyncio PushConsumer: long-polling pulls per owned queue, handed to a listener.

Per owned queue one pull task loops: flow control first (cached count, cached size, offset span,
fact sheet 7.5 thresholds), then PULL_MESSAGE with suspend 15 s (the broker holds it until messages
arrive), filtered again by tag on the client, cached in the ProcessQueue and submitted to the consume
service. Offsets are committed every 5 s (ClientInstance), piggybacked on pulls, and on shutdown.

Shutdown is graceful: pulls stop, in-flight listener calls finish, offsets are persisted, orderly
locks are released and UNREGISTER_CLIENT tells the brokers, so the group rebalances at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Unpack

from orbitmq.client.api import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from orbitmq.client.consume import ConcurrentConsumeService, ConsumeSettings, Listener, OrderlyConsumeService
from orbitmq.client.consumer_base import ConsumerBase
from orbitmq.client.consumer_stats import ConsumerStats
from orbitmq.client.offset_store import (
    OffsetStore,
    ReadOffsetType,
)
from orbitmq.client.options import PushConsumerKeywords, PushConsumerOptions, client_setup
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.rebalance import Rebalancer, retry_topic
from orbitmq.client.results import ConsumeType, MessageModel, PullStatus
from orbitmq.client.running_info import consume_directly, running_info
from orbitmq.client.send_back import SendBack
from orbitmq.client.subscription import (
    EXPRESSION_TAG,
    Subscription,
    parse_subscription,
)
from orbitmq.common.errors import ClientError
from orbitmq.message.model import MessageExt, MessageQueue

log = logging.getLogger("orbitmq.client")

BROKER_SUSPEND_MAX_MS = 15000
PULL_RPC_TIMEOUT_S = 30.0
FLOW_CONTROL_DELAY_S = 0.05
PULL_EXCEPTION_DELAY_S = 1.0
LOCK_INTERVAL_S = 20.0


class PushConsumer(ConsumerBase):
    """See `PushConsumerOptions` (client/options.py) for the settings."""

    consume_type = ConsumeType.CONSUME_PASSIVELY

    def __init__(
        self,
        group: str,
        namesrv_addrs: str | Sequence[str] | None = None,
        *,
        options: PushConsumerOptions | None = None,
        **keywords: Unpack[PushConsumerKeywords],
    ) -> None:
        setup, self.options = client_setup(group, namesrv_addrs, options or PushConsumerOptions(), keywords)
        self._set_up(setup, self.options)
        self._subscriptions: dict[str, Subscription] = {}
        self._listener: Listener | None = None
        self._orderly = False
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._send_back: SendBack | None = None  # made on the first message sent back
        self.rebalancer: Rebalancer | None = None
        self.offset_store: OffsetStore | None = None
        self.consume_service: ConcurrentConsumeService | OrderlyConsumeService | None = None
        self.started = False
        self.paused = False
        self.consumer_stats = ConsumerStats(setup.clock)  # pull / consume TPS and RT for running info
        self.start_timestamp_ms = 0

    # ---- configuration ----------------------------------------------------------------------

    def register_listener(self, listener: Listener, *, orderly: bool = False) -> None:
        """`listener(messages, context)`; concurrent listeners answer ConsumeStatus, orderly ones
        ConsumeOrderlyStatus (None means success, an exception means retry)."""
        self._listener = listener
        self._orderly = orderly

    def register_orderly_listener(self, listener: Listener) -> None:
        self.register_listener(listener, orderly=True)

    @property
    def orderly(self) -> bool:
        return self._orderly

    @property
    def max_reconsume(self) -> int:
        if self.options.max_reconsume_times >= 0:
            return self.options.max_reconsume_times
        return 2**31 - 1 if self._orderly else 16

    # ---- ConsumerInner ----------------------------------------------------------------------

    def subscriptions(self) -> list[Subscription]:
        subs = list(self._subscriptions.values())
        if self.message_model is MessageModel.CLUSTERING:
            subs.append(parse_subscription(retry_topic(self.group), "*", sub_version=0))
        return subs

    async def do_rebalance(self) -> None:
        if self.rebalancer is not None and self.started and not self.paused:
            await self.rebalancer.do_rebalance()

    async def persist_consumer_offset(self) -> None:
        if self.offset_store is not None and self.rebalancer is not None:
            await self.offset_store.persist_all(list(self.rebalancer.process_queues))

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if self.started:
            return
        if self._listener is None:
            raise ClientError("register a listener before starting the consumer")
        if not self._subscriptions:
            raise ClientError("subscribe to at least one topic before starting the consumer")
        instance, self.offset_store, self.rebalancer = await self._open(
            orderly=self._orderly,
            offset_store_dir=self.options.offset_store_dir,
            on_added=self._on_queue_added,
            on_removed=self._on_queue_removed,
        )
        for sub in self.subscriptions():
            self.rebalancer.subscriptions[sub.topic] = sub
        options = self.options
        settings = ConsumeSettings(
            self.group,
            self._listener,
            options.consume_concurrency,
            options.consume_batch_size,
            self.message_model,
            self.offset_store,
        )
        if self._orderly:
            self.consume_service = OrderlyConsumeService(
                settings,
                lock=self.rebalancer.lock,
                send_back=self._send_back_via_producer,
                max_reconsume_times=self.max_reconsume,
                suspend_s=options.suspend_current_queue_time,
                monotonic=self.clock.monotonic,
            )
        else:
            self.consume_service = ConcurrentConsumeService(settings, send_back=self.send_message_back)
        self.consume_service.stats = self.consumer_stats
        self.start_timestamp_ms = self.clock.now_ms()
        instance.register_consumer(self)
        self.started = True
        await instance.start()
        try:
            await instance.refresh_subscriptions(self)
        except ClientError:  # a broker refused a SQL92 subscription (CHECK_CLIENT_CONFIG)
            await self.shutdown()
            raise
        if self._orderly and self.message_model is MessageModel.CLUSTERING:
            self._tasks.append(asyncio.get_running_loop().create_task(self._lock_service()))
        await self.do_rebalance()
        instance.rebalance_immediately()

    async def shutdown(self) -> None:
        """Finish in-flight messages, persist offsets, release locks, leave the group."""
        if not self.started:
            return
        self.started = False
        for task in self._tasks:
            task.cancel()
        for task in list(self._pull_tasks.values()):
            task.cancel()
        for task in [*self._tasks, *self._pull_tasks.values()]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._pull_tasks.clear()
        if self.consume_service is not None:
            await self.consume_service.shutdown(wait=True)
        assert self.instance is not None and self.rebalancer is not None
        try:
            await self.persist_consumer_offset()
        except Exception as exc:  # a dead broker must not keep the consumer from leaving
            log.warning("%s: persisting offsets at shutdown failed: %s", self.group, exc)
        if self._orderly and self.message_model is MessageModel.CLUSTERING:
            await self.rebalancer.unlock(list(self.rebalancer.process_queues))
        for pq in self.rebalancer.process_queues.values():
            pq.dropped = True
        if self._send_back is not None:
            await self._send_back.shutdown()
        await self.instance.unregister_consumer(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    def suspend(self) -> None:
        """Stop pulling (queues are kept); `resume()` continues."""
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    @property
    def consumed_count(self) -> int:
        return self.consume_service.consumed if self.consume_service is not None else 0

    def assigned_queues(self) -> list[MessageQueue]:
        return sorted(self.rebalancer.process_queues) if self.rebalancer is not None else []

    async def reset_offset(self, offsets: dict[MessageQueue, int]) -> None:
        """Continue the given queues from these offsets (RESET_CONSUMER_CLIENT_OFFSET): their cached
        messages are dropped without committing and the next rebalance takes them up again."""
        if self.rebalancer is None or self.offset_store is None:
            return
        for mq, offset in offsets.items():
            pq = self.rebalancer.process_queues.pop(mq, None)
            if pq is not None:
                pq.dropped = True
                task = self._pull_tasks.pop(mq, None)
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
                pq.clear()
            self.offset_store.update_offset(mq, offset)
            with contextlib.suppress(Exception):
                await self.offset_store.persist(mq)
            self.offset_store.remove_offset(mq)
        if self.instance is not None:
            self.instance.rebalance_immediately()

    # ---- requests an admin tool has the broker relay (client/running_info.py) -----------------

    async def running_info(self, extra: dict[str, str], *, jstack: bool = False) -> bytes:
        """ConsumerRunningInfo JSON (GET_CONSUMER_RUNNING_INFO)."""
        return await running_info(self, extra, jstack=jstack)

    async def consume_message_directly(self, msg: MessageExt, broker_name: str) -> bytes:
        """ConsumeMessageDirectlyResult JSON (CONSUME_MESSAGE_DIRECTLY)."""
        return await consume_directly(self, msg, broker_name)

    # ---- rebalance callbacks ----------------------------------------------------------------

    async def _on_queue_added(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        log.debug("%s: now consuming %s from offset %d", self.group, mq, offset)
        task = asyncio.get_running_loop().create_task(self._pull_loop(mq, pq, offset), name=f"pull {mq}")
        self._pull_tasks[mq] = task

    async def _on_queue_removed(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        task = self._pull_tasks.pop(mq, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        assert self.offset_store is not None and self.rebalancer is not None
        if isinstance(self.consume_service, OrderlyConsumeService):
            # Wait until the queue's current batch is done, so the next owner starts after it.
            async with self.consume_service.queue_lock(mq):
                pass
        if self.message_model is MessageModel.CLUSTERING:
            with contextlib.suppress(Exception):
                await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        if self._orderly and self.message_model is MessageModel.CLUSTERING:
            await self.rebalancer.unlock([mq])
        pq.clear()
        return True

    async def _lock_service(self) -> None:
        await asyncio.sleep(1.0)
        while True:
            if self.rebalancer is not None:
                await self.rebalancer.lock_all()
            await asyncio.sleep(LOCK_INTERVAL_S)

    # ---- pulling ----------------------------------------------------------------------------

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        assert (
            self.instance is not None and self.offset_store is not None and self.consume_service is not None
        )
        instance, store, service = self.instance, self.offset_store, self.consume_service
        broker_id = 0
        was_locked = False
        while not pq.dropped and self.started:
            if self.paused:
                await asyncio.sleep(1.0)
                continue
            if (
                pq.msg_count > self.options.pull_threshold_for_queue
                or pq.msg_size > self.pull_threshold_size_for_queue
            ):
                await asyncio.sleep(FLOW_CONTROL_DELAY_S)
                continue
            if self._orderly:
                if self.message_model is MessageModel.CLUSTERING and not pq.locked:
                    await asyncio.sleep(self.options.suspend_current_queue_time)
                    continue
                if not was_locked:
                    # A queue just locked may have been consumed further by its previous owner.
                    assert self.rebalancer is not None
                    fresh = await self.rebalancer.compute_pull_from_where(mq)
                    if fresh >= 0:
                        offset = fresh
                    was_locked = True
            elif pq.max_span > self.options.consume_concurrently_max_span:
                await asyncio.sleep(FLOW_CONTROL_DELAY_S)
                continue
            sub = self._subscription_for(mq.topic)
            if sub is None:
                return
            found = instance.broker_address_for_subscribe(mq.broker_name, broker_id)
            if found is None:
                await instance.update_topic_route(mq.topic)
                await asyncio.sleep(PULL_EXCEPTION_DELAY_S)
                continue
            addr, is_slave = found
            sys_flag = FLAG_SUSPEND | FLAG_SUBSCRIPTION
            commit_offset = 0
            if self.message_model is MessageModel.CLUSTERING:
                commit_offset = await store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY)
                if commit_offset > 0 and not is_slave:
                    sys_flag |= FLAG_COMMIT_OFFSET
            pull_began = self.clock.monotonic()
            try:
                result = await instance.api.pull_message(
                    addr,
                    group=self.group,
                    mq=mq,
                    offset=offset,
                    max_nums=self.options.pull_batch_size,
                    sys_flag=sys_flag,
                    commit_offset=max(commit_offset, 0),
                    suspend_timeout_ms=BROKER_SUSPEND_MAX_MS,
                    subscription=sub.sub_string,
                    sub_version=sub.sub_version,
                    expression_type=sub.expression_type,
                    timeout=PULL_RPC_TIMEOUT_S,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("%s: pull of %s failed: %s", self.group, mq, exc)
                broker_id = 0
                await asyncio.sleep(PULL_EXCEPTION_DELAY_S)
                continue
            if pq.is_dropped():
                return
            pq.touch_pull()
            pull_ms = (self.clock.monotonic() - pull_began) * 1000
            self.consumer_stats.pulled(mq.topic, len(result.messages), pull_ms)
            broker_id = result.suggest_which_broker_id
            if result.status is PullStatus.FOUND:
                offset = result.next_begin_offset
                if sub.is_all or sub.expression_type != EXPRESSION_TAG:
                    msgs = list(result.messages)  # nothing to re-check: no call per message
                else:
                    msgs = [m for m in result.messages if sub.matches(m.tags)]
                if msgs:
                    pq.msg_acc_count = result.max_offset - msgs[-1].queue_offset
                    dispatch = pq.put_messages(msgs)
                    service.submit(msgs, pq, mq, dispatch)
                elif pq.is_empty:
                    store.update_offset(mq, offset, increase_only=True)
            elif result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
                offset = result.next_begin_offset
                if pq.is_empty:
                    store.update_offset(mq, offset, increase_only=True)
            else:  # OFFSET_ILLEGAL: the broker says where the queue really is
                log.warning(
                    "%s: offset %d of %s is illegal, moving to %d",
                    self.group,
                    offset,
                    mq,
                    result.next_begin_offset,
                )
                offset = result.next_begin_offset
                store.update_offset(mq, offset)
                with contextlib.suppress(Exception):
                    await store.persist(mq)
            if self.options.pull_interval > 0:
                await asyncio.sleep(self.options.pull_interval)

    def _subscription_for(self, topic: str) -> Subscription | None:
        if self.rebalancer is None:
            return None
        return self.rebalancer.subscriptions.get(topic)

    # ---- sending back -----------------------------------------------------------------------

    async def send_message_back(self, msg: MessageExt, delay_level: int, mq: MessageQueue) -> bool:
        """CONSUMER_SEND_MSG_BACK to the message's broker; on failure re-send it to the retry topic
        ourselves. False only when both failed (the caller then retries locally)."""
        return await self._sender().send(msg, delay_level, mq, self.max_reconsume)

    async def _send_back_via_producer(self, msg: MessageExt, delay_level: int, mq: MessageQueue) -> bool:
        """The orderly service's way back: straight to the retry topic (no broker-side scheduling)."""
        return await self._sender().via_producer(msg, delay_level, self.max_reconsume)

    def _sender(self) -> SendBack:
        if self._send_back is None:
            assert self.instance is not None
            self._send_back = SendBack(self.group, self.instance, self.clock)
        return self._send_back
