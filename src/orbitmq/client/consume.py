"""Running listeners: concurrently (bounded task pool / thread pool) or orderly (one batch at a time per
queue, under the queue's broker lock).

A listener is `listener(messages, context) -> status` and may be a coroutine function (run as tasks,
at most `concurrency` at once) or a plain function (run on a thread pool of `concurrency` threads).
Returning None counts as success; raising counts as failure (RECONSUME_LATER / SUSPEND).

Concurrent failure handling (fact sheet 7.7): in CLUSTERING each failed message is sent back to the
broker (CONSUMER_SEND_MSG_BACK: retry topic with a delay level, DLQ after max reconsume times); when
that fails the consumer's `send_back` falls back to re-sending itself, and when that fails too the
message is consumed again locally after 5 s. Offsets only move past finished messages.

This module knows nothing of pulling or rebalancing; the push consumer wires it up.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, NamedTuple

from orbitmq.client.consumer_stats import ConsumerStats
from orbitmq.client.offset_store import OffsetStore
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.results import (
    ConsumeConcurrentlyContext,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
    concurrently_status,
    orderly_status,
)
from orbitmq.message import properties as P
from orbitmq.message.model import MessageExt, MessageQueue

log: Final = logging.getLogger("orbitmq.client")

MAX_TIME_CONSUME_CONTINUOUSLY_S: Final = 60.0
CONSUME_LATER_DELAY_S: Final = 5.0

Listener = Callable[..., Any]


def restore_retry_topic(msgs: list[MessageExt], group: str) -> None:
    """Messages pulled from %RETRY%<group> are shown with the topic they were first sent to."""
    retry = "%RETRY%" + group
    for msg in msgs:
        original = msg.properties.get(P.RETRY_TOPIC)
        if original and msg.topic == retry:
            msg.topic = original


class _ListenerRunner:
    """Calls the listener: a coroutine function on the loop, a plain one on `concurrency` threads. With
    `bounded`, at most `concurrency` calls run at once (orderly: one batch per queue, many queues);
    the concurrent service bounds its calls itself (at most that many workers)."""

    def __init__(self, listener: Listener, concurrency: int, *, bounded: bool = True) -> None:
        self.listener = listener
        self.is_async = inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(
            getattr(listener, "__call__", None)  # noqa: B004  (objects with an async __call__)
        )
        self.semaphore: asyncio.Semaphore | None = asyncio.Semaphore(concurrency) if bounded else None
        self.executor: concurrent.futures.ThreadPoolExecutor | None = None
        if not self.is_async:
            self.executor = concurrent.futures.ThreadPoolExecutor(
                concurrency, thread_name_prefix="orbitmq-consume"
            )

    async def call(self, msgs: list[MessageExt], context: object) -> Any:
        if self.semaphore is None:
            return await self._call(msgs, context)
        async with self.semaphore:
            return await self._call(msgs, context)

    async def _call(self, msgs: list[MessageExt], context: object) -> Any:
        if self.is_async:
            return await self.listener(msgs, context)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self.executor, self.listener, msgs, context)
        if inspect.isawaitable(result):  # a sync callable that returned a coroutine
            result = await result
        return result

    def shutdown(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=True)


class ConsumeSettings(NamedTuple):
    """What both consume services are given by their push consumer."""

    group: str
    listener: Listener
    concurrency: int
    batch_size: int
    message_model: MessageModel
    offset_store: OffsetStore


class _ConsumeService:
    """What both services keep: the settings, the listener's runner, their tasks and statistics."""

    def __init__(self, settings: ConsumeSettings, *, bounded: bool) -> None:
        self.group = settings.group
        self.runner = _ListenerRunner(settings.listener, settings.concurrency, bounded=bounded)
        self.concurrency = settings.concurrency
        self.batch_size = settings.batch_size
        self.message_model = settings.message_model
        self.offset_store = settings.offset_store
        self.tasks: set[asyncio.Task[None]] = set()
        self.consumed = 0
        self.stats = ConsumerStats()  # the push consumer puts its own (with its clock) here


class ConcurrentConsumeService(_ConsumeService):
    def __init__(
        self,
        settings: ConsumeSettings,
        *,
        send_back: Callable[[MessageExt, int, MessageQueue], Awaitable[bool]],
    ) -> None:
        super().__init__(settings, bounded=False)
        self.send_back = send_back
        # At most `concurrency` worker tasks take the submitted batches in order until none is left (the
        # consume thread pool of RocketMQ): a Task and a semaphore round per batch (one message by
        # default) cost the consumer more than a short listener does.
        self._backlog: collections.deque[tuple[list[MessageExt], ProcessQueue, MessageQueue]] = (
            collections.deque()
        )
        # Workers still taking batches: counted down by the worker itself as it leaves (a finished task
        # leaves `tasks` only in a later callback, and a submit before that must start a new worker).
        self._workers = 0

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        backlog = self._backlog
        size = self.batch_size
        for i in range(0, len(msgs), size):
            backlog.append((msgs[i : i + size], pq, mq))
        idle = min(len(backlog), self.concurrency - self._workers)
        if idle > 0:
            loop = asyncio.get_running_loop()
            for _ in range(idle):
                self._workers += 1
                task = loop.create_task(self._work())
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

    async def _work(self) -> None:
        backlog = self._backlog
        try:
            while backlog:
                msgs, pq, mq = backlog.popleft()
                try:
                    await self._consume(msgs, pq, mq)
                except Exception:  # the worker goes on with the next batch (a Task per batch did too)
                    log.exception("%s: consuming %d messages of %s failed", self.group, len(msgs), mq)
        finally:
            self._workers -= 1

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        restore_retry_topic(msgs, self.group)
        context = ConsumeConcurrentlyContext(mq)
        status: ConsumeStatus | None
        began = self.stats.clock.monotonic()
        try:
            answer = await self.runner.call(msgs, context)
        except Exception:
            log.exception("%s: listener failed on %d messages of %s", self.group, len(msgs), mq)
            answer = ConsumeStatus.RECONSUME_LATER
        status = concurrently_status(answer)
        if status is None:
            log.warning("%s: listener answered %r; treating it as RECONSUME_LATER", self.group, answer)
            status = ConsumeStatus.RECONSUME_LATER
        ok = len(msgs) if status is ConsumeStatus.CONSUME_SUCCESS else max(context.ack_index + 1, 0)
        rt_ms = (self.stats.clock.monotonic() - began) * 1000
        self.stats.consumed(mq.topic, ok, len(msgs) - ok, rt_ms)
        if pq.is_dropped():
            return  # the queue moved to another consumer, which will redeliver from the committed offset
        ack_index = len(msgs) - 1 if status is ConsumeStatus.CONSUME_SUCCESS else context.ack_index
        self.consumed += len(msgs)
        retry_locally: list[MessageExt] = []
        if status is not ConsumeStatus.CONSUME_SUCCESS and self.message_model is MessageModel.CLUSTERING:
            for msg in msgs[ack_index + 1 :]:
                if not await self.send_back(msg, context.delay_level_when_next_consume, mq):
                    msg.reconsume_times += 1
                    retry_locally.append(msg)
        elif status is not ConsumeStatus.CONSUME_SUCCESS:
            log.warning(
                "%s: BROADCASTING drops %d failed messages of %s", self.group, len(msgs) - ack_index - 1, mq
            )
        done = [m for m in msgs if m not in retry_locally] if retry_locally else msgs
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            self.offset_store.update_offset(mq, offset, increase_only=True)
        if retry_locally:
            asyncio.get_running_loop().call_later(
                CONSUME_LATER_DELAY_S, self._resubmit, retry_locally, pq, mq
            )

    def _resubmit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if not pq.dropped:
            self.submit(msgs, pq, mq)

    async def shutdown(self, wait: bool = True) -> None:
        if wait and self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)
        self._backlog.clear()  # (not waiting: what no worker took yet is dropped, as unstarted tasks were)
        for task in list(self.tasks):
            task.cancel()
        self.runner.shutdown()


class OrderlyConsumeService(_ConsumeService):
    def __init__(
        self,
        settings: ConsumeSettings,
        *,
        lock: Callable[[MessageQueue], Awaitable[bool]],
        send_back: Callable[[MessageExt, int, MessageQueue], Awaitable[bool]],
        max_reconsume_times: int,
        monotonic: Callable[[], float],
        suspend_s: float = 1.0,
    ) -> None:
        super().__init__(settings, bounded=True)
        self.lock = lock
        self.send_back = send_back
        self.max_reconsume_times = max_reconsume_times
        self.suspend_s = suspend_s
        self.monotonic = monotonic
        self.queue_locks: dict[MessageQueue, asyncio.Lock] = {}
        self.stopping = False

    def submit(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool = True
    ) -> None:
        if not dispatch:
            return
        task = asyncio.get_running_loop().create_task(self._consume(pq, mq))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def queue_lock(self, mq: MessageQueue) -> asyncio.Lock:
        return self.queue_locks.setdefault(mq, asyncio.Lock())

    async def _consume(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        async with self.queue_lock(mq):
            began = self.monotonic()
            while not pq.dropped and not self.stopping:
                must_lock = self.message_model is MessageModel.CLUSTERING
                if must_lock and (not pq.locked or pq.is_lock_expired()) and not await self.lock(mq):
                    await asyncio.sleep(self.suspend_s)
                    continue
                if self.monotonic() - began > MAX_TIME_CONSUME_CONTINUOUSLY_S:
                    # Give other queues a turn; the rest is picked up by a fresh task.
                    asyncio.get_running_loop().call_soon(self.submit, [], pq, mq, True)
                    return
                msgs = pq.take_messages(self.batch_size)
                if not msgs:
                    return
                restore_retry_topic(msgs, self.group)
                context = ConsumeOrderlyContext(mq)
                status: ConsumeOrderlyStatus | None
                called = self.stats.clock.monotonic()
                try:
                    answer = await self.runner.call(msgs, context)
                except Exception:
                    log.exception("%s: orderly listener failed on %s", self.group, mq)
                    answer = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                status = orderly_status(answer)
                if status is None:
                    log.warning("%s: orderly listener answered %r; suspending the queue", self.group, answer)
                    status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                ok = len(msgs) if status is ConsumeOrderlyStatus.SUCCESS else 0
                rt_ms = (self.stats.clock.monotonic() - called) * 1000
                self.stats.consumed(mq.topic, ok, len(msgs) - ok, rt_ms)
                # A batch the listener consumed is committed even if a rebalance dropped the queue
                # meanwhile: the removal waits for this batch and persists the offset after it, so the
                # next owner does not consume it again (a reset_offset clears pq first: commit is -1).
                if status is ConsumeOrderlyStatus.SUCCESS or (
                    not pq.is_dropped() and await self._give_up(msgs, mq)
                ):
                    self.consumed += len(msgs)
                    offset = pq.commit()
                    if offset >= 0:
                        self.offset_store.update_offset(mq, offset)
                    continue
                if pq.is_dropped():
                    return
                for msg in msgs:
                    msg.reconsume_times += 1
                pq.make_messages_to_consume_again(msgs)
                suspend = (
                    context.suspend_current_queue_time_ms / 1000
                    if context.suspend_current_queue_time_ms > 0
                    else self.suspend_s
                )
                await asyncio.sleep(suspend)
            if pq.dropped or self.stopping:
                pq.consuming = False

    async def _give_up(self, msgs: list[MessageExt], mq: MessageQueue) -> bool:
        """After max reconsume times a message goes to the retry topic (the broker then DLQs it)."""
        if not all(m.reconsume_times >= self.max_reconsume_times for m in msgs):
            return False
        for msg in msgs:
            if not await self.send_back(msg, 3 + msg.reconsume_times, mq):
                return False
        return True

    async def shutdown(self, wait: bool = True) -> None:
        self.stopping = True
        if wait and self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)
        for task in list(self.tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.runner.shutdown()
