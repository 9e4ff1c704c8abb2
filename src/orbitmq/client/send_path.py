"""One producer's send pipeline: route → queue choice → attempt → retry (fact sheet 7.5), used by the
asyncio Producer, the blocking Producer's own-thread sends (direct_send.py) and its loop-side sends.

One time budget per send; each attempt goes round robin to another broker than the last, skipping
slow ones under latency fault tolerance; after every attempt `needs_retry` decides. A first attempt
is made without a coroutine when route, address and connection are at hand (`send_soon`, `SendCall`:
one future and one callback per message); the rest runs in the one retry loop, `attempts`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from orbitmq.client.api import RETRYABLE_SEND_CODES, NamesrvUnreachableError
from orbitmq.client.fault import FaultStrategy
from orbitmq.client.instance import ClientInstance
from orbitmq.client.options import ProducerOptions
from orbitmq.client.results import SendResult, SendStatus
from orbitmq.client.routing import TopicPublishInfo, select_queue
from orbitmq.client.send_request import (
    HeaderTemplates,
    MessageQueueSelector,
    Outgoing,
    Prepared,
    encode_checked_batch,
    prepare_message,
    start_send,
)
from orbitmq.client.send_result import send_result
from orbitmq.common.clock import Clock
from orbitmq.common.errors import BrokerError, ClientError, ConnectError, RequestTimeoutError
from orbitmq.message import properties as P
from orbitmq.message.model import Message, MessageQueue
from orbitmq.message.sysflag import TRANSACTION_PREPARED_TYPE
from orbitmq.message.validation import validate_message
from orbitmq.protocol.bodies_core import MASTER_ID
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand

log: Final = logging.getLogger("orbitmq.client")
# Statics: compiled, a module attribute or an enum member is a lookup per send otherwise.
_GET_RUNNING_LOOP: Final = asyncio.get_running_loop
_SEND_OK: Final = SendStatus.SEND_OK

# The failures after which another attempt may help (the rest end the send at once).
ATTEMPT_FAILURES: Final = (ConnectError, RequestTimeoutError, BrokerError)


class Resume(NamedTuple):
    """Where `SendPath.attempts` picks up a send whose first attempt was made elsewhere."""

    start: float  # the send's start on the producer's monotonic clock (its budget counts from here)
    attempt: int  # attempts already made
    last_broker: str | None
    last_error: Exception | None


class Attempt(NamedTuple):
    """A first attempt made outside the loop (on a blocking producer's thread): its queue, what it
    sent (a retry sends the same bytes), and its result or the error it failed with."""

    mq: MessageQueue
    out: Outgoing
    result: SendResult | None
    error: Exception | None


def chosen_queue(
    info: TopicPublishInfo, msg: Message, selector: MessageQueueSelector, arg: Any
) -> MessageQueue:
    """`selector`'s queue among the topic's, or ClientError when it chose one the topic does not have."""
    queue = selector(info.message_queues, msg, arg)
    if queue not in info.message_queues:
        raise ClientError(f"the selector chose {queue}, which is not a queue of {msg.topic}")
    return queue


class SendPath:
    """The route cache, queue choice, prepared messages and headers, and the attempts of one producer."""

    def __init__(self, group: str, options: ProducerOptions, clock: Clock, *, transactional: bool) -> None:
        self.group = group
        self.options = options
        self.clock = clock
        self.transactional = transactional  # half messages get TRANSACTION_PREPARED (prepare)
        # Copies of the options the per-message path reads (native attributes when compiled).
        self.send_timeout = options.send_timeout
        self.attempts_sync = 1 + options.retry_times
        self.attempts_async = 1 + options.retry_times_async
        self.retry_not_stored = options.retry_another_broker_when_not_store_ok
        self.compress_over = options.compress_over
        self.compress_level = options.compress_level
        self.max_message_size = options.max_message_size
        self.create_topic_key = options.create_topic_key
        self.default_topic_queue_nums = options.default_topic_queue_nums
        self.fault = FaultStrategy(
            enabled=options.send_latency_fault_enable,
            clock=clock,
            latency_max=options.latency_max,
            not_available_durations=options.not_available_durations,
        )
        self.publish_info: dict[str, TopicPublishInfo] = {}
        # send_async futures and background tasks, until done (the producer's shutdown waits for them)
        self.pending: set[asyncio.Future[Any]] = set()
        self.templates = HeaderTemplates(options.max_header_templates)
        self.instance: ClientInstance | None = None
        # The loop the connections live on (set at start): asking asyncio costs a getpid() per send.
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started = False

    def require_instance(self) -> ClientInstance:
        if self.instance is None or not self.started:
            raise ClientError(f"the producer {self.group} is not started")
        return self.instance

    # ---- route and queue --------------------------------------------------------------------

    async def route(self, topic: str) -> TopicPublishInfo:
        """The topic's publish info: cached, else from the nameserver, else the template topic's."""
        info = self.publish_info.get(topic)
        if info is not None and info.ok:
            return info
        instance = self.require_instance()
        self.publish_info.setdefault(topic, TopicPublishInfo(topic, []))
        await instance.update_topic_route(topic)
        info = self.publish_info[topic]
        if not info.ok:
            await instance.update_topic_route(
                topic, default_topic=self.create_topic_key, default_queue_nums=self.default_topic_queue_nums
            )
            info = self.publish_info[topic]
        if not info.ok:
            self.publish_info.pop(topic, None)
            if instance.namesrv_error is not None:
                # "No route info" would send the user looking at the topic; the nameserver is the problem
                raise NamesrvUnreachableError(str(instance.namesrv_error))
            raise BrokerError(ResponseCode.TOPIC_NOT_EXIST, f"No route info of this topic: {topic}")
        return info

    def cached_target(self, topic: str) -> tuple[ClientInstance, MessageQueue, str] | None:
        """The next queue of `topic` and its master's address when both are at hand without awaiting
        (for a first attempt made without a coroutine); None otherwise. Selecting moves the round robin."""
        instance = self.instance
        if instance is None or not self.started:
            return None
        info = self.publish_info.get(topic)
        if info is None or not info.ok:
            return None
        mq = select_queue(info, None, self.fault)
        # (ClientInstance.master_address inline: an interpreted call per message otherwise)
        addrs = instance.broker_addrs.get(mq.broker_name)
        addr = addrs.get(MASTER_ID) if addrs is not None else None
        if addr is None:
            return None
        return instance, mq, addr

    async def master_address(self, mq: MessageQueue) -> str:
        addr = await self.require_instance().find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            raise ConnectError(f"The broker[{mq.broker_name}] not exist")
        return addr

    # ---- what goes on the wire ----------------------------------------------------------------

    def validate(self, msg: Message) -> None:
        validate_message(msg, self.max_message_size)
        if msg.topic == self.create_topic_key:
            raise ClientError(f"The topic[{msg.topic}] is conflict with default topic.")

    def prepare(self, msg: Message) -> Prepared:
        prepared = prepare_message(msg, self.compress_over, self.compress_level)
        if self.transactional and msg.properties.get(P.TRAN_MSG) == "true":
            return prepared.with_sys_flag(prepared.sys_flag | TRANSACTION_PREPARED_TYPE)
        return prepared

    def outgoing(self, msg: Message) -> Outgoing:
        """`msg` prepared (given its UNIQ_KEY) for every attempt."""
        prepared = self.prepare(msg)
        return Outgoing(msg.topic, msg.properties[P.UNIQ_KEY], prepared, msg.flag, False)

    def batch(self, messages: Sequence[Message]) -> Outgoing:
        """One SEND_BATCH_MESSAGE for `messages` (checked as RocketMQ's batch rules want)."""
        msgs = list(messages)
        if not msgs:
            raise ClientError("a batch needs at least one message")
        topic, body, batch_props = encode_checked_batch(msgs, self.validate, self.max_message_size)
        msg_id = ",".join(m.properties[P.UNIQ_KEY] for m in msgs)
        return Outgoing(topic, msg_id, Prepared(body, 0, batch_props, 0, None), 0, True)

    def header(
        self, mq: MessageQueue, topic: str, prepared: Prepared, flag: int = 0, batch: bool = False
    ) -> dict[str, str]:
        return self.templates.header(
            mq,
            topic,
            prepared,
            flag,
            batch,
            group=self.group,
            default_topic=self.create_topic_key,
            default_topic_queue_nums=self.default_topic_queue_nums,
            born_timestamp=self.clock.now_ms(),
        )

    # ---- attempts ---------------------------------------------------------------------------

    def send_soon(self, msg: Message, budget: float, attempts: int) -> asyncio.Future[SendResult] | None:
        """The first attempt sent now, without a coroutine, when the route, master address and an open
        connection are at hand; None (nothing sent) when one of them needs awaiting."""
        target = self.cached_target(msg.topic)
        if target is None:
            return None
        instance, mq, addr = target
        prepared = self.prepare(msg)
        future: asyncio.Future[SendResult] = (self.loop or _GET_RUNNING_LOOP()).create_future()
        start = self.clock.monotonic()
        call = SendCall(
            self, future, msg, prepared, budget=budget, attempts=attempts, start=start, mq=mq, addr=addr
        )
        header = self.header(mq, msg.topic, prepared, msg.flag)
        if not start_send(instance.api.remoting, addr, prepared.body, header, timeout=budget, callback=call):
            return None  # no open connection yet: the coroutine path connects
        return future

    def send_started(self, msg: Message, timeout: float | None) -> asyncio.Future[SendResult]:
        """A send with `send`'s retries as a future, started now (for callers on another thread).
        Validation errors are raised at once. Call on the loop."""
        self.validate(msg)
        budget = self.send_timeout if timeout is None else timeout
        future = self.send_soon(msg, budget, self.attempts_sync)
        if future is not None:
            return future
        return _GET_RUNNING_LOOP().create_task(self.send_with_retries(msg, budget, self.attempts_sync))

    async def send_with_retries(
        self, msg: Message, budget: float, attempts: int, fixed_queue: MessageQueue | None = None
    ) -> SendResult:
        return await self.attempts(self.outgoing(msg), budget, attempts, fixed_queue)

    def resume(self, first: Attempt, budget: float, start: float, chosen: bool) -> asyncio.Future[SendResult]:
        """The attempts after a `first` one made elsewhere (the blocking producer's, on its caller's
        thread): it failed, or it was stored without SEND_OK and `needs_retry` said so. A `chosen`
        queue gets no other attempt. Call on the loop."""
        loop = _GET_RUNNING_LOOP()
        attempts = 1 if chosen else self.attempts_sync
        mq, error = first.mq, first.error
        if error is not None and not self.needs_retry(mq, start, None, error, attempts - 1):
            failed: asyncio.Future[SendResult] = loop.create_future()
            failed.set_exception(error)
            return failed
        resume = Resume(start, 1, mq.broker_name, error)
        return loop.create_task(self.attempts(first.out, budget, attempts, mq if chosen else None, resume))

    async def attempts(
        self,
        out: Outgoing,
        budget: float,
        attempts: int,
        fixed_queue: MessageQueue | None = None,
        resume: Resume | None = None,
    ) -> SendResult:
        """The retry loop: up to `attempts` attempts (counting those `resume` says were made) within
        `budget` seconds, to `fixed_queue` or to the queue `select_queue` picks."""
        instance = self.require_instance()
        start = self.clock.monotonic() if resume is None else resume.start
        topic = out.topic
        info = self.publish_info.get(topic)
        if info is None or not info.ok:  # the cached route needs no coroutine
            info = await self.route(topic)
        first, last_broker, last_error = 0, None, None
        if resume is not None:
            first, last_broker, last_error = resume.attempt, resume.last_broker, resume.last_error
        for attempt in range(first, attempts):
            remaining = budget - (self.clock.monotonic() - start)
            if remaining <= 0:
                raise RequestTimeoutError(
                    f"sending to {topic} timed out after {budget}s ({attempt} attempts); last error: "
                    f"{last_error}"
                )
            mq = fixed_queue or select_queue(info, last_broker, self.fault)
            last_broker = mq.broker_name
            began = self.clock.monotonic()
            try:
                # the cached address first: awaiting the lookup coroutine costs more than the lookup
                addr = instance.master_address(mq.broker_name) or await self.master_address(mq)
                header = self.header(mq, topic, out.prepared, out.flag, out.batch)
                result = await instance.api.send_message(
                    addr,
                    mq.broker_name,
                    out.prepared.body,
                    header,
                    msg_id=out.msg_id,
                    timeout=remaining,
                    batch=out.batch,
                )
            except ATTEMPT_FAILURES as exc:
                if not self.needs_retry(mq, began, None, exc, attempts - attempt - 1):
                    raise
                last_error = exc
                continue
            if not self.needs_retry(mq, began, result, None, attempts - attempt - 1):
                return result
        raise RequestTimeoutError(f"sending to {topic}: no attempt left; last error: {last_error}")

    def needs_retry(
        self,
        mq: MessageQueue,
        began: float,
        result: SendResult | None,
        error: BaseException | None,
        attempts_left: int,
    ) -> bool:
        """After one attempt to `mq` (begun at `began`) that gave `result` or failed with `error`:
        record it for the fault tolerance, and say whether another attempt follows (one is left, and
        the failure is a connection failure, a timeout or a retryable code, or the message was stored
        without SEND_OK under retry_another_broker_when_not_store_ok). A failed connection also has
        the topic's route refreshed soon."""
        if error is None:
            self.record_latency(mq, began, isolation=False)
            assert result is not None
            return attempts_left > 0 and self.retry_not_stored and result.status is not _SEND_OK
        if not isinstance(error, ATTEMPT_FAILURES):
            return False
        self.record_latency(mq, began, isolation=True)
        if isinstance(error, BrokerError):
            return attempts_left > 0 and error.code in RETRYABLE_SEND_CODES
        log.debug("send to %s failed: %s", mq, error)
        self.refresh_route_soon(mq.topic)
        return attempts_left > 0

    def record_latency(self, mq: MessageQueue, began: float, *, isolation: bool) -> None:
        if not self.fault.enabled:
            return  # nothing is recorded anyway; skip the clock read
        latency_ms = int((self.clock.monotonic() - began) * 1000)
        self.fault.update_fault_item(mq.broker_name, latency_ms, isolation=isolation)

    def refresh_route_soon(self, topic: str) -> None:
        instance = self.instance
        if instance is None:
            return
        self.track(_GET_RUNNING_LOOP().create_task(instance.update_topic_route(topic)))

    def track(self, task: asyncio.Task[Any]) -> None:
        """Keep `task` in `pending` until it is done; its failure is logged, never left unretrieved.
        (One done callback instead of two: each is one more loop handle per async send.)"""
        pending = self.pending

        def done(t: asyncio.Future[Any]) -> None:
            pending.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.debug("async send failed: %s", t.exception())

        pending.add(task)
        task.add_done_callback(done)


class SendCall:
    """The connection's callback for a first attempt made by `SendPath.send_soon`: fills the caller's
    future with the SendResult, or hands the send to the retry loop. Every SendCall fills its future
    exactly once (unless the caller cancelled it); a cancelled future stops retries."""

    __slots__ = ("addr", "attempts", "budget", "future", "mq", "msg", "path", "prepared", "start")

    def __init__(
        self,
        path: SendPath,
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
        self.path = path
        self.future = future
        self.msg = msg
        self.prepared = prepared
        self.budget = budget
        self.attempts = attempts
        self.start = start
        self.mq = mq
        self.addr = addr

    def __call__(self, response: RemotingCommand | None, error: Exception | None) -> None:
        path = self.path
        mq = self.mq
        result: SendResult | None = None
        if response is not None:
            try:
                msg_id = self.msg.properties[P.UNIQ_KEY]
                result = send_result(response, self.addr, mq.broker_name, mq.topic, msg_id, sent_to=mq)
            except Exception as exc:
                error = exc
            else:
                if result.status is _SEND_OK and not path.fault.enabled:
                    self.finish(result, None)  # the usual answer: nothing to record or decide
                    return
        if path.needs_retry(mq, self.start, result, error, self.attempts - 1):
            self._resume(error)
        else:
            self.finish(result, error)

    def finish(self, result: SendResult | None, error: BaseException | None) -> None:
        future = self.future
        self.path.pending.discard(future)
        if future.done():  # cancelled by its caller
            return
        if error is None:
            future.set_result(result)  # type: ignore[arg-type]
        else:
            future.set_exception(error)
            future.exception()  # retrieved: a dropped send_async future must not log "never retrieved"

    def _resume(self, last_error: Exception | None) -> None:
        """The next attempts, in the retry loop (a Task: rare, only after a failure)."""
        future, path, msg = self.future, self.path, self.msg
        if future.done():  # the caller gave up: no retries
            path.pending.discard(future)
            return
        out = Outgoing(msg.topic, msg.properties[P.UNIQ_KEY], self.prepared, msg.flag, False)
        resume = Resume(self.start, 1, self.mq.broker_name, last_error)
        task = _GET_RUNNING_LOOP().create_task(path.attempts(out, self.budget, self.attempts, None, resume))
        task.add_done_callback(self._chain)

    def _chain(self, task: asyncio.Task[SendResult]) -> None:
        if task.cancelled():
            self.path.pending.discard(self.future)
            self.future.cancel()
            return
        error = task.exception()
        self.finish(None if error is not None else task.result(), error)
