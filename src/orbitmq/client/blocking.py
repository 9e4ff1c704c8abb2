"""The blocking client facade: the asyncio core run on one background event-loop thread.

Same names as `orbitmq.client.aio` (`Producer`, `PushConsumer`, `LitePullConsumer`), same
constructor arguments, plain methods instead of coroutines. One daemon thread per process runs the
loop for every blocking client; a listener given to a blocking PushConsumer runs on the consumer's
thread pool (or on the loop, when it is a coroutine function).

This module only forwards calls; behaviour lives in the asyncio classes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

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

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError(
                "blocking client methods cannot be called from the client loop; use orbitmq.client.aio"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

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

    @property
    def group(self) -> str:
        return self._aio.group

    @property
    def aio(self) -> aio.Producer:
        return self._aio

    def start(self) -> None:
        _loop().run(self._aio.start())

    def shutdown(self) -> None:
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
        return _loop().run(self._aio.send(msg, timeout=timeout, queue=queue, selector=selector, arg=arg))

    def send_orderly(self, msg: Message, key: Any, *, timeout: float | None = None) -> SendResult:
        return _loop().run(self._aio.send_orderly(msg, key, timeout=timeout))

    def send_async(
        self,
        msg: Message,
        callback: Callable[[SendResult | None, BaseException | None], None] | None = None,
        *,
        timeout: float | None = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Returns at once; `callback(result, None)` or `callback(None, error)` runs on the client loop."""

        async def go() -> SendResult:
            return await self._aio.send_async(msg, timeout=timeout)

        future = _loop().submit(go())
        if callback is not None:

            def done(f: concurrent.futures.Future[SendResult]) -> None:
                exc = f.exception()
                callback(None if exc else f.result(), exc)

            future.add_done_callback(done)
        return future

    def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None) -> None:
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
        return _loop().run(self._aio.send_batch(messages, timeout=timeout, queue=queue))

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
