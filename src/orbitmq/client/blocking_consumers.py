"""The blocking consumers: `PushConsumer` and `LitePullConsumer` of `orbitmq.client.aio`, their
coroutines run on the client loop thread (loop_thread.py). A blocking PushConsumer's listener runs on
the consumer's thread pool (on the loop when it is a coroutine function)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, Self, TypeVar

from orbitmq.client import aio
from orbitmq.client.consumer_base import ConsumerBase
from orbitmq.client.facade import forwarded, takes_arguments_of
from orbitmq.client.loop_thread import client_loop
from orbitmq.message.model import MessageExt, MessageQueue

Consumer = TypeVar("Consumer", aio.PushConsumer, aio.LitePullConsumer)


class _BlockingConsumer(Generic[Consumer]):
    """What both blocking consumers forward the same way."""

    def __init__(self, consumer: Consumer) -> None:
        self._aio: Consumer = consumer

    @property
    def group(self) -> str:
        return self._aio.group

    @property
    def aio(self) -> Consumer:
        return self._aio

    subscribe = forwarded(ConsumerBase.subscribe)
    unsubscribe = forwarded(ConsumerBase.unsubscribe)

    def start(self) -> None:
        client_loop().run(self._aio.start())

    def shutdown(self) -> None:
        client_loop().run(self._aio.shutdown())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class PushConsumer(_BlockingConsumer[aio.PushConsumer]):
    """Blocking push consumer; see `orbitmq.client.aio.PushConsumer` for the arguments."""

    @takes_arguments_of(aio.PushConsumer)
    def __init__(self, consumer: aio.PushConsumer) -> None:
        super().__init__(consumer)

    def register_listener(self, listener: Callable[..., Any], *, orderly: bool = False) -> None:
        self._aio.register_listener(listener, orderly=orderly)

    def register_orderly_listener(self, listener: Callable[..., Any]) -> None:
        self._aio.register_listener(listener, orderly=True)

    def suspend(self) -> None:
        client_loop().loop.call_soon_threadsafe(self._aio.suspend)

    def resume(self) -> None:
        client_loop().loop.call_soon_threadsafe(self._aio.resume)

    @property
    def consumed_count(self) -> int:
        return self._aio.consumed_count

    def assigned_queues(self) -> list[MessageQueue]:
        async def get() -> list[MessageQueue]:
            return self._aio.assigned_queues()

        return client_loop().run(get())


class LitePullConsumer(_BlockingConsumer[aio.LitePullConsumer]):
    """Blocking lite-pull consumer; see `orbitmq.client.aio.LitePullConsumer` for the arguments."""

    @takes_arguments_of(aio.LitePullConsumer)
    def __init__(self, consumer: aio.LitePullConsumer) -> None:
        super().__init__(consumer)

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        client_loop().run(self._aio.assign(list(mqs)))

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        return client_loop().run(self._aio.poll(timeout))

    def assignment(self) -> list[MessageQueue]:
        async def get() -> list[MessageQueue]:
            return self._aio.assignment()

        return client_loop().run(get())

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return client_loop().run(self._aio.fetch_message_queues(topic))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        client_loop().run(self._aio.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        client_loop().run(self._aio.seek_to_begin(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        client_loop().run(self._aio.seek_to_end(mq))

    def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        client_loop().run(self._aio.seek_to_timestamp(mq, timestamp_ms))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return client_loop().run(self._aio.offset_for_timestamp(mq, timestamp_ms))

    def min_offset(self, mq: MessageQueue) -> int:
        return client_loop().run(self._aio.min_offset(mq))

    def max_offset(self, mq: MessageQueue) -> int:
        return client_loop().run(self._aio.max_offset(mq))

    def committed(self, mq: MessageQueue) -> int:
        return client_loop().run(self._aio.committed(mq))

    def commit(self, offsets: dict[MessageQueue, int] | None = None) -> None:
        client_loop().run(self._aio.commit(offsets))

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        items = list(mqs)
        client_loop().loop.call_soon_threadsafe(self._aio.pause, items)

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        items = list(mqs)
        client_loop().loop.call_soon_threadsafe(self._aio.resume, items)
