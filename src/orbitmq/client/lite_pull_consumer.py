"""The asyncio LitePullConsumer: background pulls into a buffer, `poll()` hands out batches.

Queues come from `subscribe()` (the group rebalances them, like a push consumer) or from `assign()`
(the caller picks them; no rebalance). Each owned queue has a pull task with the same flow control
as the push consumer plus a global cap on buffered messages (`pull_threshold_for_all`).

Offsets: a message counts as consumed once `poll()` returned it. With `auto_commit` (default) the
consumed offsets are committed at most every `auto_commit_interval` seconds from within `poll()` and
on shutdown; otherwise `commit()` commits them. `seek()` moves a queue: its buffered messages are
dropped and pulling restarts at the new offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Unpack

from orbitmq.client.api import FLAG_LITE_PULL_MESSAGE, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from orbitmq.client.consumer_base import ConsumerBase
from orbitmq.client.instance import ClientInstance
from orbitmq.client.offset_store import (
    OffsetStore,
    ReadOffsetType,
)
from orbitmq.client.options import (
    LitePullConsumerKeywords,
    LitePullConsumerOptions,
    client_setup,
)
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.rebalance import Rebalancer
from orbitmq.client.results import ConsumeType, PullStatus
from orbitmq.client.routing import subscribe_queues
from orbitmq.client.running_info import lite_pull_running_info
from orbitmq.client.subscription import Subscription, parse_subscription
from orbitmq.common.errors import ClientError
from orbitmq.message.model import MessageExt, MessageQueue

log = logging.getLogger("orbitmq.client")

BROKER_SUSPEND_MAX_MS = 20000
PULL_RPC_TIMEOUT_S = 30.0
FLOW_CONTROL_DELAY_S = 0.05
PAUSE_DELAY_S = 0.2
PULL_EXCEPTION_DELAY_S = 1.0


@dataclass(slots=True)
class _QueueState:
    pq: ProcessQueue
    pull_offset: int
    consume_offset: int = -1  # one past the last message poll() returned
    generation: int = 0
    paused: bool = False
    task: asyncio.Task[None] | None = None


class LitePullConsumer(ConsumerBase):
    """See `LitePullConsumerOptions` (client/options.py) for the settings."""

    consume_type = ConsumeType.CONSUME_ACTIVELY

    def __init__(
        self,
        group: str,
        namesrv_addrs: str | Sequence[str] | None = None,
        *,
        options: LitePullConsumerOptions | None = None,
        **keywords: Unpack[LitePullConsumerKeywords],
    ) -> None:
        setup, self.options = client_setup(
            group, namesrv_addrs, options or LitePullConsumerOptions(), keywords
        )
        self._set_up(setup, self.options)
        self._subscriptions: dict[str, Subscription] = {}
        self._assigned: list[MessageQueue] | None = None
        self._queues: dict[MessageQueue, _QueueState] = {}
        self._buffer: asyncio.Queue[tuple[MessageQueue, int, list[MessageExt]]] | None = None
        self._buffered = 0
        self._last_commit = 0.0
        self._paused: set[MessageQueue] = set()
        # Generations are unique per consumer, not per queue state: a queue lost and regained in a
        # rebalance gets a new state whose generation no batch of the old state (still buffered) carries.
        self._generations = itertools.count(1)
        self.rebalancer: Rebalancer | None = None
        self.offset_store: OffsetStore | None = None
        self.started = False
        self.start_timestamp_ms = 0

    # ---- configuration ----------------------------------------------------------------------

    def _subscribe_refused(self) -> str | None:
        return "subscribe() and assign() are mutually exclusive" if self._assigned is not None else None

    async def assign(self, mqs: Iterable[MessageQueue]) -> None:
        """Consume exactly these queues (no rebalance); may be called again to change them."""
        if self._subscriptions and self._assigned is None:
            raise ClientError("subscribe() and assign() are mutually exclusive")
        self._assigned = sorted(set(mqs))
        for mq in self._assigned:
            self._subscriptions.setdefault(mq.topic, parse_subscription(mq.topic, "*", sub_version=0))
        if self.started:
            await self._apply_assignment()

    # ---- ConsumerInner ----------------------------------------------------------------------

    async def running_info(self, extra: dict[str, str], *, jstack: bool = False) -> bytes:
        """ConsumerRunningInfo JSON (GET_CONSUMER_RUNNING_INFO relayed by a broker)."""
        return await lite_pull_running_info(self, extra)

    async def do_rebalance(self) -> None:
        if self.rebalancer is not None and self.started and self._assigned is None:
            await self.rebalancer.do_rebalance()

    async def persist_consumer_offset(self) -> None:
        if self.offset_store is not None:
            await self.offset_store.persist_all(list(self._queues))

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if self.started:
            return
        instance, self.offset_store, self.rebalancer = await self._open(
            orderly=False,
            offset_store_dir=self.options.offset_store_dir,
            on_added=self._on_queue_added,
            on_removed=self._on_queue_removed,
        )
        self._buffer = asyncio.Queue()
        self.rebalancer.subscriptions.update(self._subscriptions)
        self.start_timestamp_ms = self.clock.now_ms()
        instance.register_consumer(self)
        self.started = True
        self._last_commit = self.clock.monotonic()
        await instance.start()
        try:
            await instance.refresh_subscriptions(self)
        except ClientError:  # a broker refused a SQL92 subscription (CHECK_CLIENT_CONFIG)
            await self.shutdown()
            raise
        if self._assigned is not None:
            await self._apply_assignment()
        else:
            await self.do_rebalance()
            instance.rebalance_immediately()

    async def shutdown(self) -> None:
        if not self.started:
            return
        self.started = False
        await self._stop_tasks(list(self._queues))
        if self.options.auto_commit:
            await self.commit()
        else:
            await self.persist_consumer_offset()
        assert self.instance is not None
        await self.instance.unregister_consumer(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    # ---- queues -----------------------------------------------------------------------------

    def assignment(self) -> list[MessageQueue]:
        return sorted(self._queues)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        instance = self._instance()
        if not await instance.update_topic_route(topic) and topic not in instance.topic_routes:
            raise ClientError(f"no route for topic {topic}")
        return subscribe_queues(topic, instance.topic_routes[topic])

    async def _apply_assignment(self) -> None:
        assert self._assigned is not None and self.rebalancer is not None
        wanted = set(self._assigned)
        for mq in [mq for mq in self._queues if mq not in wanted]:
            await self._on_queue_removed(mq, self._queues[mq].pq)
        for mq in self._assigned:
            if mq in self._queues:
                continue
            if mq.topic not in self._instance().topic_routes:
                await self._instance().update_topic_route(mq.topic)
            offset = await self.rebalancer.compute_pull_from_where(mq)
            await self._on_queue_added(mq, ProcessQueue(self.clock), max(offset, 0))

    async def _on_queue_added(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        state = _QueueState(pq, offset, offset, generation=next(self._generations), paused=mq in self._paused)
        self._queues[mq] = state
        self._start_task(mq, state)

    async def _on_queue_removed(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        state = self._queues.get(mq)
        if state is not None:
            await self._stop_tasks([mq])
            assert self.offset_store is not None
            if self.options.auto_commit and state.consume_offset >= 0:
                self.offset_store.update_offset(mq, state.consume_offset)
            with contextlib.suppress(Exception):
                await self.offset_store.persist(mq)
            self.offset_store.remove_offset(mq)
            del self._queues[mq]
        pq.dropped = True
        return True

    def _start_task(self, mq: MessageQueue, state: _QueueState) -> None:
        state.task = asyncio.get_running_loop().create_task(
            self._pull_loop(mq, state), name=f"lite pull {mq}"
        )

    async def _stop_tasks(self, mqs: Iterable[MessageQueue]) -> None:
        tasks = []
        for mq in mqs:
            state = self._queues.get(mq)
            if state is not None and state.task is not None:
                state.task.cancel()
                tasks.append(state.task)
                state.task = None
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        """Stop handing out messages of these queues: whatever was pulled but not polled is dropped and
        pulled again from the consumed offset on `resume()`."""
        for mq in mqs:
            self._paused.add(mq)
            state = self._queues.get(mq)
            if state is not None and not state.paused:
                state.paused = True
                self._rewind(state)

    def _rewind(self, state: _QueueState) -> None:
        # A new generation makes in-flight pulls and buffered batches of the old one void.
        state.generation = next(self._generations)
        state.pq.clear()
        if state.consume_offset >= 0:
            state.pull_offset = state.consume_offset

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in mqs:
            self._paused.discard(mq)
            state = self._queues.get(mq)
            if state is not None:
                state.paused = False

    # ---- offsets ----------------------------------------------------------------------------

    def _instance(self) -> ClientInstance:
        if self.instance is None or not self.started:
            raise ClientError(f"the consumer {self.group} is not started")
        return self.instance

    async def _broker(self, mq: MessageQueue) -> str:
        addr = await self._instance().find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self._instance().api.get_min_offset(await self._broker(mq), mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self._instance().api.get_max_offset(await self._broker(mq), mq)

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self._instance().api.search_offset(await self._broker(mq), mq, timestamp_ms)

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Consume `mq` from `offset` next (between its min and max offset)."""
        state = self._queues.get(mq)
        if state is None:
            raise ClientError(f"{mq} is not assigned to this consumer")
        low, high = await self.min_offset(mq), await self.max_offset(mq)
        if not low <= offset <= high:
            raise ClientError(f"seek offset {offset} is out of range [{low}, {high}] of {mq}")
        await self._stop_tasks([mq])
        self._rewind(state)
        state.pull_offset = offset
        state.consume_offset = offset
        assert self.offset_store is not None
        self.offset_store.update_offset(mq, offset)
        self._start_task(mq, state)

    async def reset_offset(self, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: owned queues continue from the given offsets."""
        assert self.offset_store is not None
        for mq, offset in offsets.items():
            state = self._queues.get(mq)
            self.offset_store.update_offset(mq, offset)
            if state is None:
                continue
            await self._stop_tasks([mq])
            self._rewind(state)
            state.pull_offset = state.consume_offset = offset
            self._start_task(mq, state)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.max_offset(mq))

    async def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        await self.seek(mq, await self.offset_for_timestamp(mq, timestamp_ms))

    async def committed(self, mq: MessageQueue) -> int:
        """The offset committed on the broker (or offsets.json), -1 if none."""
        assert self.offset_store is not None
        return await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)

    async def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        """Commit the consumed offsets (everything poll() returned so far), or the given ones."""
        assert self.offset_store is not None
        if offsets is None:
            offsets = {mq: s.consume_offset for mq, s in self._queues.items() if s.consume_offset >= 0}
        for mq, offset in offsets.items():
            self.offset_store.update_offset(mq, offset)
        await self.offset_store.persist_all(list(offsets))
        self._last_commit = self.clock.monotonic()

    # ---- polling ----------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The next batch of pulled messages, or [] after `timeout` seconds (default poll_timeout)."""
        self._instance()
        assert self._buffer is not None
        if (
            self.options.auto_commit
            and self.clock.monotonic() - self._last_commit >= self.options.auto_commit_interval
        ):
            await self.commit()
        wait = self.options.poll_timeout if timeout is None else timeout
        deadline = self.clock.monotonic() + wait
        while True:
            remaining = deadline - self.clock.monotonic()
            try:
                if remaining <= 0:
                    mq, generation, msgs = self._buffer.get_nowait()
                else:
                    async with asyncio.timeout(remaining):
                        mq, generation, msgs = await self._buffer.get()
            except (TimeoutError, asyncio.QueueEmpty):
                return []
            self._buffered -= len(msgs)
            state = self._queues.get(mq)
            if state is None or state.generation != generation or state.pq.dropped:
                continue  # seeked or reassigned since it was pulled
            offset = state.pq.remove_messages(msgs)
            state.consume_offset = offset if offset >= 0 else msgs[-1].queue_offset + 1
            return msgs

    async def _pull_loop(self, mq: MessageQueue, state: _QueueState) -> None:
        instance = self.instance
        if not self.started or instance is None:
            return  # added by a rebalance round that was still running when shutdown() began
        assert self._buffer is not None
        pq = state.pq
        broker_id = 0
        while self.started and not pq.dropped:
            if state.paused:
                await asyncio.sleep(PAUSE_DELAY_S)
                continue
            if (
                self._buffered > self.options.pull_threshold_for_all
                or pq.msg_count > self.options.pull_threshold_for_queue
                or pq.msg_size > self.pull_threshold_size_for_queue
                or pq.max_span > self.options.consume_max_span
            ):
                await asyncio.sleep(FLOW_CONTROL_DELAY_S)
                continue
            sub = self._subscriptions.get(mq.topic) or parse_subscription(mq.topic, "*")
            found = instance.broker_address_for_subscribe(mq.broker_name, broker_id)
            if found is None:
                await instance.update_topic_route(mq.topic)
                await asyncio.sleep(PULL_EXCEPTION_DELAY_S)
                continue
            generation = state.generation
            try:
                result = await instance.api.pull_message(
                    found[0],
                    group=self.group,
                    mq=mq,
                    offset=state.pull_offset,
                    max_nums=self.options.pull_batch_size,
                    sys_flag=FLAG_SUSPEND | FLAG_SUBSCRIPTION | FLAG_LITE_PULL_MESSAGE,
                    commit_offset=0,
                    suspend_timeout_ms=self.options.broker_suspend_ms,
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
            broker_id = result.suggest_which_broker_id
            pq.touch_pull()
            if state.generation != generation:
                continue  # paused or seeked while the pull was in flight
            state.pull_offset = result.next_begin_offset
            if result.status is PullStatus.FOUND:
                msgs = [m for m in result.messages if sub.matches(m.tags)]
                if msgs:
                    pq.put_messages(msgs)
                    self._buffered += len(msgs)
                    self._buffer.put_nowait((mq, state.generation, msgs))
                elif pq.is_empty:
                    state.consume_offset = max(state.consume_offset, result.next_begin_offset)
            elif result.status is PullStatus.OFFSET_ILLEGAL:
                log.warning("%s: offset of %s illegal, moved to %d", self.group, mq, result.next_begin_offset)
            elif pq.is_empty and state.consume_offset >= 0:
                state.consume_offset = max(state.consume_offset, result.next_begin_offset)
