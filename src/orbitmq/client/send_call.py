"""One send on its way without a coroutine or a Task: the producer's hot path.

`Producer.send` and `send_async` send the first attempt from the caller's own call when everything it
needs is at hand (cached route and master address, an open pooled connection). The connection calls the
`SendCall` back with the response (or the timeout, or the connection's loss), and the call fills the
caller's future with the SendResult. Per message that is one future and one callback, instead of a Task
driving five nested coroutines and two futures.

Anything slower continues in `Producer._attempts`, the one retry loop: a failed attempt that may be
retried (on another broker, within the same time budget), or a send whose route, address or connection
is not at hand (the producer never starts a SendCall then). Every SendCall fills its future exactly once
(unless the caller cancelled it), and a cancelled future stops retries.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from orbitmq.client.results import SendResult, SendStatus
from orbitmq.client.send_result import send_result
from orbitmq.common.errors import BrokerError, ConnectError, RequestTimeoutError
from orbitmq.message import properties as P
from orbitmq.message.model import Message, MessageQueue
from orbitmq.protocol.command import RemotingCommand

if TYPE_CHECKING:
    from orbitmq.client.producer import Producer
    from orbitmq.client.send_request import Prepared

log: Final = logging.getLogger("orbitmq.client")
_SEND_OK: Final = SendStatus.SEND_OK  # a static: an enum member is a class attribute lookup per send

# The failures after which another attempt may help (the rest end the send at once).
ATTEMPT_FAILURES: Final = (ConnectError, RequestTimeoutError, BrokerError)


class Resume(NamedTuple):
    """Where `Producer._attempts` picks up a send whose first attempt a SendCall made."""

    start: float  # the send's start on the producer's monotonic clock (its budget counts from here)
    attempt: int  # attempts already made
    last_broker: str | None
    last_error: Exception | None


class SendCall:
    """The connection's callback for one attempt; see the module docstring."""

    __slots__ = ("addr", "attempts", "budget", "future", "mq", "msg", "prepared", "producer", "start")

    def __init__(
        self,
        producer: Producer,
        future: asyncio.Future[SendResult],
        msg: Message,
        prepared: Prepared,
        *,
        budget: float,
        attempts: int,
        start: float,
        mq: MessageQueue,
        addr: str,
    ) -> None:
        self.producer = producer
        self.future = future
        self.msg = msg
        self.prepared = prepared
        self.budget = budget
        self.attempts = attempts
        self.start = start
        self.mq = mq
        self.addr = addr

    def __call__(self, response: RemotingCommand | None, error: Exception | None) -> None:
        producer = self.producer
        mq = self.mq
        if response is not None:
            try:
                msg_id = self.msg.properties[P.UNIQ_KEY]
                result = send_result(response, self.addr, mq.broker_name, mq.topic, msg_id, sent_to=mq)
            except Exception as exc:
                error = exc
            else:
                if producer.fault.enabled:
                    producer._record_latency(mq, self.start, isolation=False)
                if (
                    result.status is not _SEND_OK
                    and producer.retry_another_broker_when_not_store_ok
                    and self.attempts > 1
                ):
                    self._resume(None)
                else:
                    self.finish(result, None)
                return
        assert error is not None
        if isinstance(error, ATTEMPT_FAILURES) and producer._retryable(mq, self.start, error):
            self._resume(error)
        else:
            self.finish(None, error)

    def finish(self, result: SendResult | None, error: BaseException | None) -> None:
        future = self.future
        self.producer._pending.discard(future)
        if future.done():  # cancelled by its caller
            return
        if error is None:
            future.set_result(result)  # type: ignore[arg-type]
        else:
            future.set_exception(error)
            future.exception()  # retrieved: a dropped send_async future must not log "never retrieved"

    def _resume(self, last_error: Exception | None) -> None:
        """The next attempts, in the producer's retry loop (a Task: rare, only after a failure)."""
        if self.future.done():  # the caller gave up: no retries
            self.producer._pending.discard(self.future)
            return
        if self.attempts <= 1:
            self.finish(None, last_error)
            return
        producer, msg, prepared = self.producer, self.msg, self.prepared
        coro = producer._attempts(
            msg.topic,
            msg.properties[P.UNIQ_KEY],
            budget=self.budget,
            attempts=self.attempts,
            fixed_queue=None,
            build=lambda mq: (prepared.body, producer._header(mq, msg.topic, prepared, msg.flag)),
            resume=Resume(self.start, 1, self.mq.broker_name, last_error),
        )
        asyncio.get_running_loop().create_task(coro).add_done_callback(self._chain)

    def _chain(self, task: asyncio.Task[SendResult]) -> None:
        if task.cancelled():
            self.producer._pending.discard(self.future)
            self.future.cancel()
            return
        error = task.exception()
        self.finish(None if error is not None else task.result(), error)


def _retrieve_exception(task: asyncio.Future[Any]) -> None:
    # The caller may drop the task; its failure must not end up as "exception was never retrieved".
    if not task.cancelled() and task.exception() is not None:
        log.debug("async send failed: %s", task.exception())


def track_send(pending: set[asyncio.Future[Any]], task: asyncio.Task[Any]) -> None:
    """Keep `task` in `pending` until it is done. One done callback instead of two: each callback is
    one more loop handle per async send."""

    def done(t: asyncio.Future[Any]) -> None:
        pending.discard(t)
        _retrieve_exception(t)

    pending.add(task)
    task.add_done_callback(done)
