"""The blocking client facade: the asyncio core run on one background event-loop thread.

Same names as `orbitmq.client.aio` (`Producer`, `PushConsumer`, `LitePullConsumer`), same
constructor arguments, plain methods instead of coroutines. One daemon thread per process runs the
loop for every blocking client; a listener given to a blocking PushConsumer runs on the consumer's
thread pool (or on the loop, when it is a coroutine function).

This module only forwards calls; behaviour lives in the asyncio classes. One exception, for speed:
`Producer.send` makes its first attempt, and `send_oneway` its write, on the caller's own thread when
the route is known (client/direct_send.py: two thread wake-ups per message saved), and hand anything
else, and any retry, to the loop, started there without a Task (`_LoopThread.call`); `send_async`
hands its sends to the loop in bulk (client/async_handoff.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, Generic, TypeVar

from orbitmq.client import aio
from orbitmq.client.aio import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    LocalTransactionState,
    MessageModel,
    MessageQueueSelector,
    MessageSelector,
    SendResult,
    SendStatus,
    TransactionListener,
    TransactionSendResult,
    create_reply_message,
    put_user_property,
    select_by_hash,
)
from orbitmq.client.async_handoff import AsyncHandoff
from orbitmq.client.direct_send import Attempt, DirectSender
from orbitmq.message.model import Message, MessageExt, MessageQueue

T = TypeVar("T")

__all__ = [
    "ConsumeConcurrentlyContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "LitePullConsumer",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "Producer",
    "PushConsumer",
    "SendResult",
    "SendStatus",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "create_reply_message",
    "put_user_property",
    "select_by_hash",
    "shutdown_loop",
]


_ON_THE_LOOP = "blocking client methods cannot be called from the client loop; use orbitmq.client.aio"


class _Reply(Generic[T]):
    """One blocking call's outcome, handed from the loop thread to the caller. The caller waits on a
    lock that the loop releases (one futex wake-up; a concurrent.futures.Future runs a Condition in
    Python code on both sides, and run_coroutine_threadsafe adds a Task per call)."""

    __slots__ = ("_error", "_future", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._future: asyncio.Future[T] | None = None
        self._error: BaseException | None = None

    def start(self, begin: Callable[..., asyncio.Future[T]], args: tuple[Any, ...]) -> None:
        """On the loop."""
        try:
            future = begin(*args)
        except BaseException as exc:  # (validation errors and the like: the caller raises them)
            self._error = exc
            self._lock.release()
            return
        future.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[T]) -> None:
        self._future = future
        self._lock.release()

    def wait(self) -> T:
        self._lock.acquire()
        if self._error is not None:
            raise self._error
        assert self._future is not None
        return self._future.result()  # (its exception, or CancelledError, is raised here)


class _LoopThread:
    _lock = threading.Lock()
    _instance: _LoopThread | None = None

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="orbitmq-client-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @classmethod
    def get(cls) -> _LoopThread:
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance

    def refuse_on_loop(self) -> None:
        """Blocking calls wait for the loop (or block on a socket): on the loop itself they would stall it."""
        if threading.current_thread() is self.thread:
            raise RuntimeError(_ON_THE_LOOP)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if threading.current_thread() is self.thread:
            coro.close()  # (never awaited: no "coroutine was never awaited" warning)
        self.refuse_on_loop()
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, begin: Callable[..., asyncio.Future[T]], *args: Any) -> T:
        """`begin(*args)` on the loop (it starts the work and returns its future), then block until that
        future is done: no Task, no coroutine, and one lock for the caller to wait on."""
        self.refuse_on_loop()
        reply: _Reply[T] = _Reply()
        self.loop.call_soon_threadsafe(reply.start, begin, args)
        return reply.wait()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self.submit(coro).result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()


def _loop() -> _LoopThread:
    return _LoopThread.get()


def shutdown_loop(timeout: float = 10.0) -> None:
    """Stop the background loop thread (shut clients down first); the next blocking call starts a new one."""
    with _LoopThread._lock:
        instance, _LoopThread._instance = _LoopThread._instance, None
    if instance is not None:
        instance.stop(timeout)


class Producer:
    """Blocking producer; see `orbitmq.client.aio.Producer` for the arguments."""

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv_addrs: str | Sequence[str] | None = None,
        **options: Any,
    ) -> None:
        self._aio = aio.Producer(group, namesrv_addrs, **options)
        self._direct = DirectSender(self._aio)
        self._handoff: AsyncHandoff | None = None

    @property
    def group(self) -> str:
        return self._aio.group

    @property
    def aio(self) -> aio.Producer:
        return self._aio

    def start(self) -> None:
        _loop().run(self._aio.start())
        self._direct = DirectSender(self._aio)  # (a restarted producer opens its sockets anew)

    def shutdown(self) -> None:
        self._direct.close()
        _loop().run(self._aio.shutdown())

    def __enter__(self) -> Producer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def send(
        self,
        msg: Message,
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> SendResult:
        loop = _loop()
        loop.refuse_on_loop()  # (before a blocking socket is used on this thread)
        producer = self._aio
        if selector is not None and queue is None:
            # Chosen on this thread from the cached route (the selector is called once, here or there).
            queue = self._direct.choose(msg, selector, arg)
            if queue is None:
                return loop.run(producer.send(msg, timeout=timeout, selector=selector, arg=arg))
        budget = producer.send_timeout if timeout is None else timeout
        start = producer.clock.monotonic()
        # The first attempt on this thread when it can be (client/direct_send.py), the rest on the loop.
        first = self._direct.attempt(msg, budget, queue)
        if first is None:
            if queue is not None:
                return loop.run(producer.send(msg, timeout=timeout, queue=queue))
            return loop.call(self._send_soon, msg, timeout)
        return self._after(first, budget, start, queue is not None)

    def _after(self, first: Attempt, budget: float, start: float, chosen: bool) -> SendResult:
        """The result of a first attempt made on this thread, or the attempts that follow it (on the
        loop): a chosen queue gets no other attempt; else as `aio.Producer.send` decides."""
        producer = self._aio
        result = first.result
        if result is not None and (
            chosen
            or result.status is SendStatus.SEND_OK
            or not producer.retry_another_broker_when_not_store_ok
            or producer.retry_times < 1
        ):
            return result
        return _loop().call(self._resume_send, first, budget, start, chosen)

    def _send_soon(self, msg: Message, timeout: float | None) -> asyncio.Future[SendResult]:
        return self._aio._send_started(msg, timeout=timeout)

    def _resume_send(
        self, first: Attempt, budget: float, start: float, chosen: bool
    ) -> asyncio.Future[SendResult]:
        return self._aio._resume_send(
            first.out, first.mq, budget=budget, start=start, error=first.error, chosen=chosen
        )

    def send_orderly(self, msg: Message, key: Any, *, timeout: float | None = None) -> SendResult:
        return self.send(msg, timeout=timeout, selector=select_by_hash, arg=key)

    def send_async(
        self,
        msg: Message,
        callback: Callable[[SendResult | None, BaseException | None], None] | None = None,
        *,
        timeout: float | None = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Returns at once; `callback(result, None)` or `callback(None, error)` runs on the client loop.
        Sends are handed to the loop in bulk (client/async_handoff.py)."""
        loop = _loop().loop
        handoff = self._handoff
        if handoff is None or handoff.loop is not loop:
            handoff = self._handoff = AsyncHandoff(self._aio, loop)
        future = handoff.submit(msg, timeout)
        if callback is not None:

            def done(f: concurrent.futures.Future[SendResult]) -> None:
                exc = f.exception()
                callback(None if exc else f.result(), exc)

            future.add_done_callback(done)
        return future

    def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None) -> None:
        if queue is None:
            _loop().refuse_on_loop()
            if self._direct.oneway(msg):  # written on this thread (client/direct_send.py)
                return
        _loop().run(self._aio.send_oneway(msg, queue=queue))

    def request(self, msg: Message, timeout: float = 3.0) -> MessageExt:
        """Send a request and wait for its reply (see `orbitmq.client.producer.Producer.request`)."""
        return _loop().run(self._aio.request(msg, timeout))

    def request_async(
        self,
        msg: Message,
        callback: Callable[[MessageExt | None, BaseException | None], None] | None = None,
        timeout: float = 3.0,
    ) -> concurrent.futures.Future[MessageExt]:
        """Returns at once; `callback(reply, None)` or `callback(None, error)` runs on the client loop."""

        async def go() -> MessageExt:
            return await self._aio.request_async(msg, timeout)

        future = _loop().submit(go())
        if callback is not None:

            def done(f: concurrent.futures.Future[MessageExt]) -> None:
                exc = f.exception()
                callback(None if exc else f.result(), exc)

            future.add_done_callback(done)
        return future

    def send_batch(
        self, messages: Sequence[Message], *, timeout: float | None = None, queue: MessageQueue | None = None
    ) -> SendResult:
        loop = _loop()
        loop.refuse_on_loop()
        producer = self._aio
        budget = producer.send_timeout if timeout is None else timeout
        start = producer.clock.monotonic()
        out = producer._batch(messages)  # (checked here: a bad batch raises on this thread)
        first = self._direct.attempt_batch(out, budget, queue)  # as send's first attempt
        if first is None:
            return loop.run(producer.send_batch(messages, timeout=timeout, queue=queue))
        return self._after(first, budget, start, queue is not None)

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return _loop().run(self._aio.fetch_publish_message_queues(topic))


class TransactionProducer(Producer):
    """Blocking transaction producer; see `orbitmq.client.transaction_producer.TransactionProducer`.
    The listener's methods may be plain functions (run on a worker thread) or coroutine functions."""

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv_addrs: str | Sequence[str] | None = None,
        *,
        listener: TransactionListener,
        **options: Any,
    ) -> None:
        self._aio = aio.TransactionProducer(group, namesrv_addrs, listener=listener, **options)
        self._direct = DirectSender(self._aio)
        self._tx = self._aio

    def send_message_in_transaction(
        self, msg: Message, arg: Any = None, *, timeout: float | None = None
    ) -> TransactionSendResult:
        return _loop().run(self._tx.send_message_in_transaction(msg, arg, timeout=timeout))


class PushConsumer:
    """Blocking push consumer; see `orbitmq.client.aio.PushConsumer` for the arguments."""

    def __init__(self, group: str, namesrv_addrs: str | Sequence[str] | None = None, **options: Any) -> None:
        self._aio = aio.PushConsumer(group, namesrv_addrs, **options)

    @property
    def group(self) -> str:
        return self._aio.group

    @property
    def aio(self) -> aio.PushConsumer:
        return self._aio

    def subscribe(
        self,
        topic: str,
        expression: str | MessageSelector | None = "*",
        *,
        expression_type: str | None = None,
    ) -> None:
        self._aio.subscribe(topic, expression, expression_type=expression_type)

    def unsubscribe(self, topic: str) -> None:
        self._aio.unsubscribe(topic)

    def register_listener(self, listener: Callable[..., Any], *, orderly: bool = False) -> None:
        self._aio.register_listener(listener, orderly=orderly)

    def register_orderly_listener(self, listener: Callable[..., Any]) -> None:
        self._aio.register_listener(listener, orderly=True)

    def start(self) -> None:
        _loop().run(self._aio.start())

    def shutdown(self) -> None:
        _loop().run(self._aio.shutdown())

    def __enter__(self) -> PushConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def suspend(self) -> None:
        _loop().loop.call_soon_threadsafe(self._aio.suspend)

    def resume(self) -> None:
        _loop().loop.call_soon_threadsafe(self._aio.resume)

    @property
    def consumed_count(self) -> int:
        return self._aio.consumed_count

    def assigned_queues(self) -> list[MessageQueue]:
        async def get() -> list[MessageQueue]:
            return self._aio.assigned_queues()

        return _loop().run(get())


class LitePullConsumer:
    """Blocking lite-pull consumer; see `orbitmq.client.aio.LitePullConsumer` for the arguments."""

    def __init__(self, group: str, namesrv_addrs: str | Sequence[str] | None = None, **options: Any) -> None:
        self._aio = aio.LitePullConsumer(group, namesrv_addrs, **options)

    @property
    def group(self) -> str:
        return self._aio.group

    @property
    def aio(self) -> aio.LitePullConsumer:
        return self._aio

    def subscribe(
        self,
        topic: str,
        expression: str | MessageSelector | None = "*",
        *,
        expression_type: str | None = None,
    ) -> None:
        self._aio.subscribe(topic, expression, expression_type=expression_type)

    def unsubscribe(self, topic: str) -> None:
        self._aio.unsubscribe(topic)

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        _loop().run(self._aio.assign(list(mqs)))

    def start(self) -> None:
        _loop().run(self._aio.start())

    def shutdown(self) -> None:
        _loop().run(self._aio.shutdown())

    def __enter__(self) -> LitePullConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        return _loop().run(self._aio.poll(timeout))

    def assignment(self) -> list[MessageQueue]:
        async def get() -> list[MessageQueue]:
            return self._aio.assignment()

        return _loop().run(get())

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return _loop().run(self._aio.fetch_message_queues(topic))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        _loop().run(self._aio.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        _loop().run(self._aio.seek_to_begin(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        _loop().run(self._aio.seek_to_end(mq))

    def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        _loop().run(self._aio.seek_to_timestamp(mq, timestamp_ms))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return _loop().run(self._aio.offset_for_timestamp(mq, timestamp_ms))

    def min_offset(self, mq: MessageQueue) -> int:
        return _loop().run(self._aio.min_offset(mq))

    def max_offset(self, mq: MessageQueue) -> int:
        return _loop().run(self._aio.max_offset(mq))

    def committed(self, mq: MessageQueue) -> int:
        return _loop().run(self._aio.committed(mq))

    def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        _loop().run(self._aio.commit(offsets))

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        items = list(mqs)
        _loop().loop.call_soon_threadsafe(self._aio.pause, items)

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        items = list(mqs)
        _loop().loop.call_soon_threadsafe(self._aio.resume, items)
