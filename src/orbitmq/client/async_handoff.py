"""The blocking Producer's `send_async`: sends handed to the client's loop in bulk.

Handing sends over one at a time would cost a coroutine, a Task, a chained future and a wake-up of the
loop thread per message. Here a caller appends the send to a queue and wakes the loop only when no
drain is pending; one drain starts every send queued meanwhile with `aio.Producer.send_async` and
copies each outcome into the caller's concurrent Future. Errors (validation included) arrive through
the future; cancelling it stops retries; callbacks run on the client's loop.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import threading
from typing import TYPE_CHECKING

from orbitmq.client.results import SendResult
from orbitmq.message.model import Message

if TYPE_CHECKING:
    from orbitmq.client.producer import Producer

_Send = tuple[Message, float | None, concurrent.futures.Future[SendResult]]


class AsyncHandoff:
    """One blocking producer's queue of sends for the loop."""

    def __init__(self, producer: Producer, loop: asyncio.AbstractEventLoop) -> None:
        self._producer = producer
        self.loop = loop
        self._queue: collections.deque[_Send] = collections.deque()
        self._lock = threading.Lock()
        self._drain_pending = False
        self.drains = 0  # loop wake-ups that started sends (fewer than the sends under load)

    def submit(self, msg: Message, timeout: float | None) -> concurrent.futures.Future[SendResult]:
        """Queue one send (any thread but the loop's); its future completes on the loop."""
        future: concurrent.futures.Future[SendResult] = concurrent.futures.Future()
        with self._lock:
            self._queue.append((msg, timeout, future))
            if self._drain_pending:
                return future  # the drain already asked for takes this one too
            self._drain_pending = True
        self.loop.call_soon_threadsafe(self._drain)
        return future

    def _drain(self) -> None:
        with self._lock:
            sends = list(self._queue)
            self._queue.clear()
            self._drain_pending = False
        self.drains += 1
        producer = self._producer
        for msg, timeout, future in sends:
            if future.cancelled():
                continue
            try:
                started = producer.send_async(msg, timeout=timeout)
            except Exception as exc:  # (validation: raised at once by the asyncio producer)
                _settle(future, None, exc)
                continue
            started.add_done_callback(functools.partial(_copy, future=future))
            future.add_done_callback(functools.partial(_cancel_on_loop, started=started, loop=self.loop))


def _copy(done: asyncio.Future[SendResult], *, future: concurrent.futures.Future[SendResult]) -> None:
    if done.cancelled():
        future.cancel()
        return
    exc = done.exception()
    _settle(future, None if exc is not None else done.result(), exc)


def _settle(
    future: concurrent.futures.Future[SendResult], result: SendResult | None, exc: BaseException | None
) -> None:
    try:
        if exc is not None:
            future.set_exception(exc)
        else:
            assert result is not None
            future.set_result(result)
    except concurrent.futures.InvalidStateError:
        pass  # cancelled by its caller meanwhile


def _cancel_on_loop(
    future: concurrent.futures.Future[SendResult],
    *,
    started: asyncio.Future[SendResult],
    loop: asyncio.AbstractEventLoop,
) -> None:
    """A caller's cancel reaches the send on the loop (a done future's callback: nothing else to do)."""
    if future.cancelled() and not started.done():
        try:
            loop.call_soon_threadsafe(started.cancel)
        except RuntimeError:
            pass  # the loop is closed: nothing is left to cancel
