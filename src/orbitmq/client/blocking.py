"""The blocking client facade: the asyncio clients run on one background loop thread (loop_thread.py),
with the same names and arguments as `orbitmq.client.aio` and plain methods instead of coroutines.
The blocking Producer sends through the same `SendPath`: a send's first attempt on the caller's thread
when the route is known (direct_send.py), anything else and every retry on the loop; `send_async`
hands its sends to the loop in bulk (async_handoff.py).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Any

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
from orbitmq.client.blocking_consumers import LitePullConsumer, PushConsumer
from orbitmq.client.direct_send import DirectSender
from orbitmq.client.facade import takes_arguments_of
from orbitmq.client.loop_thread import client_loop, shutdown_loop
from orbitmq.client.send_path import Attempt
from orbitmq.message.model import Message, MessageExt, MessageQueue

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


class Producer:
    """Blocking producer; see `orbitmq.client.aio.Producer` for the arguments."""

    @takes_arguments_of(aio.Producer)
    def __init__(self, producer: aio.Producer) -> None:
        self._aio = producer
        self._direct = DirectSender(self._aio.path)
        self._handoff: AsyncHandoff | None = None

    @property
    def group(self) -> str:
        return self._aio.group

    @property
    def aio(self) -> aio.Producer:
        return self._aio

    def start(self) -> None:
        client_loop().run(self._aio.start())
        self._direct = DirectSender(self._aio.path)  # (a restarted producer opens its sockets anew)

    def shutdown(self) -> None:
        self._direct.close()
        client_loop().run(self._aio.shutdown())

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
        loop = client_loop()
        loop.refuse_on_loop()  # (before a blocking socket is used on this thread)
        path = self._aio.path
        if selector is not None and queue is None:
            # Chosen on this thread from the cached route (the selector is called once, here or there).
            queue = self._direct.choose(msg, selector, arg)
            if queue is None:
                return loop.run(self._aio.send(msg, timeout=timeout, selector=selector, arg=arg))
        budget = path.send_timeout if timeout is None else timeout
        start = path.clock.monotonic()
        # The first attempt on this thread when it can be (client/direct_send.py), the rest on the loop.
        first = self._direct.attempt(msg, budget, queue)
        if first is None:
            if queue is not None:
                return loop.run(self._aio.send(msg, timeout=timeout, queue=queue))
            return loop.call(path.send_started, msg, timeout)
        return self._after(first, budget, start, queue is not None)

    def _after(self, first: Attempt, budget: float, start: float, chosen: bool) -> SendResult:
        """The result of a first attempt made on this thread, or of the attempts that follow it on the
        loop (as `SendPath.needs_retry` decides; a chosen queue gets no other attempt)."""
        path = self._aio.path
        result = first.result
        if result is not None and (
            result.status is SendStatus.SEND_OK
            or not path.needs_retry(first.mq, start, result, None, 0 if chosen else path.attempts_sync - 1)
        ):
            return result
        return client_loop().call(path.resume, first, budget, start, chosen)

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
        loop = client_loop().loop
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
            client_loop().refuse_on_loop()
            if self._direct.oneway(msg):  # written on this thread (client/direct_send.py)
                return
        client_loop().run(self._aio.send_oneway(msg, queue=queue))

    def request(self, msg: Message, timeout: float = 3.0) -> MessageExt:
        """Send a request and wait for its reply (see `orbitmq.client.producer.Producer.request`)."""
        return client_loop().run(self._aio.request(msg, timeout))

    def request_async(
        self,
        msg: Message,
        callback: Callable[[MessageExt | None, BaseException | None], None] | None = None,
        timeout: float = 3.0,
    ) -> concurrent.futures.Future[MessageExt]:
        """Returns at once; `callback(reply, None)` or `callback(None, error)` runs on the client loop."""

        async def go() -> MessageExt:
            return await self._aio.request_async(msg, timeout)

        future = client_loop().submit(go())
        if callback is not None:

            def done(f: concurrent.futures.Future[MessageExt]) -> None:
                exc = f.exception()
                callback(None if exc else f.result(), exc)

            future.add_done_callback(done)
        return future

    def send_batch(
        self, messages: Sequence[Message], *, timeout: float | None = None, queue: MessageQueue | None = None
    ) -> SendResult:
        loop = client_loop()
        loop.refuse_on_loop()
        path = self._aio.path
        budget = path.send_timeout if timeout is None else timeout
        start = path.clock.monotonic()
        out = path.batch(messages)  # (checked here: a bad batch raises on this thread)
        first = self._direct.attempt_batch(out, budget, queue)  # as send's first attempt
        if first is None:
            return loop.run(self._aio.send_batch(messages, timeout=timeout, queue=queue))
        return self._after(first, budget, start, queue is not None)

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return client_loop().run(self._aio.fetch_publish_message_queues(topic))


class TransactionProducer(Producer):
    """Blocking transaction producer; see `orbitmq.client.transaction_producer.TransactionProducer`.
    The listener's methods may be plain functions (run on a worker thread) or coroutine functions."""

    @takes_arguments_of(aio.TransactionProducer)
    def __init__(self, producer: aio.TransactionProducer) -> None:
        self._tx = producer
        self._aio = producer
        self._direct = DirectSender(self._tx.path)
        self._handoff = None

    def send_message_in_transaction(
        self, msg: Message, arg: Any = None, *, timeout: float | None = None
    ) -> TransactionSendResult:
        return client_loop().run(self._tx.send_message_in_transaction(msg, arg, timeout=timeout))
