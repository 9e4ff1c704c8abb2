"""The asyncio Producer: sync (awaited), async (task) and oneway sends, batches, ordered sends.

Send algorithm (fact sheet 7.5, DefaultMQProducerImpl.sendDefaultImpl): the whole send has one time
budget (`send_timeout`); each attempt picks a queue round robin, on another broker than the attempt
before (routing.select_queue); connection failures, timeouts and retryable response codes move on to
the next attempt (1 + `retry_times` in all); a stored-but-not-SEND_OK status is returned as is.
Everything the caller got wrong is a ClientError raised before any byte is sent.

This module knows nothing of consumers; the route cache and connections belong to `ClientInstance`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

from orbitmq.client.api import RETRYABLE_SEND_CODES, NamesrvUnreachableError
from orbitmq.client.config import ClientConfig
from orbitmq.client.fault import LATENCY_MAX_MS, NOT_AVAILABLE_DURATION_MS, FaultStrategy
from orbitmq.client.instance import ClientInstance
from orbitmq.client.options import own_config
from orbitmq.client.request_reply import prepare_request
from orbitmq.client.results import SendResult, SendStatus
from orbitmq.client.routing import TopicPublishInfo, select_queue
from orbitmq.client.send_call import ATTEMPT_FAILURES, Resume, SendCall, track_send
from orbitmq.client.send_request import (
    DEFAULT_MAX_HEADER_TEMPLATES,
    DEFAULT_TOPIC,
    HeaderTemplates,
    MessageQueueSelector,
    Outgoing,
    Prepared,
    encode_checked_batch,
    prepare_message,
    select_by_hash,
    start_send,
)
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import BrokerError, ClientError, ConnectError, RequestTimeoutError
from orbitmq.message import properties as P
from orbitmq.message.model import Message, MessageExt, MessageQueue
from orbitmq.message.validation import validate_message
from orbitmq.protocol.bodies_core import MASTER_ID
from orbitmq.protocol.codes import ResponseCode
from orbitmq.transport.tls import TlsClientSettings

log: Final = logging.getLogger("orbitmq.client")
# A static: compiled, `asyncio.get_running_loop` is a module attribute lookup per send.
_GET_RUNNING_LOOP: Final = asyncio.get_running_loop


def chosen_queue(
    info: TopicPublishInfo, msg: Message, selector: MessageQueueSelector, arg: Any
) -> MessageQueue:
    """`selector`'s queue among the topic's, or ClientError when it chose one the topic does not have."""
    queue = selector(info.message_queues, msg, arg)
    if queue not in info.message_queues:
        raise ClientError(f"the selector chose {queue}, which is not a queue of {msg.topic}")
    return queue


class Producer:
    """Sends messages; `async with Producer(...) as p: await p.send(msg)`.

    The options are RocketMQ's DefaultMQProducer settings in snake_case, plus orbitmq's own bound
    `max_header_templates` (4096): the request-header templates kept per (topic, broker, queue), cleared
    whole when full."""

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv_addrs: str | Sequence[str] | None = None,
        *,
        instance: ClientInstance | None = None,
        config: ClientConfig | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        tls: bool | TlsClientSettings | None = None,
        send_timeout: float = 3.0,
        retry_times: int = 2,
        retry_times_async: int = 2,
        compress_over: int = 4096,
        compress_level: int = 5,
        max_message_size: int = 4 * 1024 * 1024,
        retry_another_broker_when_not_store_ok: bool = False,
        send_latency_fault_enable: bool = False,
        latency_max: Sequence[int] = LATENCY_MAX_MS,
        not_available_durations: Sequence[int] = NOT_AVAILABLE_DURATION_MS,
        create_topic_key: str = DEFAULT_TOPIC,
        default_topic_queue_nums: int = 4,
        max_header_templates: int = DEFAULT_MAX_HEADER_TEMPLATES,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        security = (access_key, secret_key, security_token, tls)
        self._config = own_config(group, namesrv_addrs, instance, config, security)
        self.group = group
        self._own_instance = instance is None
        self.instance: ClientInstance | None = instance
        self._loop: asyncio.AbstractEventLoop | None = None  # set by start()
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.retry_times_async = retry_times_async
        self.compress_over = compress_over
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self.max_header_templates = max_header_templates
        self.clock = clock
        self.fault = FaultStrategy(
            enabled=send_latency_fault_enable,
            clock=clock,
            latency_max=latency_max,
            not_available_durations=not_available_durations,
        )
        self.publish_info: dict[str, TopicPublishInfo] = {}
        # send_async futures and background tasks, until done (shutdown waits for them)
        self._pending: set[asyncio.Future[Any]] = set()
        self._request_topics: set[str] = set()  # topics whose brokers heard us before a request
        self._header_templates = HeaderTemplates(max_header_templates)
        self.started = False

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if self.started:
            return
        if self.instance is None:
            assert self._config is not None
            self.instance = ClientInstance(self._config)
        self.instance.register_producer(self)
        await self.instance.start()
        # The loop its connections and tasks live on: a send's future is made there (asking asyncio
        # for the running loop costs a getpid() call per send).
        self._loop = _GET_RUNNING_LOOP()
        self.started = True

    async def shutdown(self) -> None:
        if not self.started:
            return
        self.started = False
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        assert self.instance is not None
        await self.instance.unregister_producer(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def _instance(self) -> ClientInstance:
        if self.instance is None or not self.started:
            raise ClientError(f"the producer {self.group} is not started")
        return self.instance

    # ---- ProducerInner ----------------------------------------------------------------------

    def publish_topics(self) -> set[str]:
        return set(self.publish_info)

    def update_topic_publish_info(self, topic: str, route: Any) -> None:
        info = TopicPublishInfo.from_route(topic, route)
        old = self.publish_info.get(topic)
        if old is not None:
            info.counter = old.counter
        self.publish_info[topic] = info

    async def find_publish_info(self, topic: str) -> TopicPublishInfo:
        info = self.publish_info.get(topic)
        if info is not None and info.ok:
            return info
        instance = self._instance()
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

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return list((await self.find_publish_info(topic)).message_queues)

    # ---- preparing messages -----------------------------------------------------------------

    def _validate(self, msg: Message) -> None:
        validate_message(msg, self.max_message_size)
        if msg.topic == self.create_topic_key:
            raise ClientError(f"The topic[{msg.topic}] is conflict with default topic.")

    def _prepare(self, msg: Message) -> Prepared:
        return prepare_message(msg, self.compress_over, self.compress_level)

    # ---- sending ----------------------------------------------------------------------------

    async def send(
        self,
        msg: Message,
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> SendResult:
        """Send and wait until the broker stored it. With `queue` (or `selector(queues, msg, arg)`) the
        message goes to that queue, without retries on other queues (ordered messages)."""
        self._validate(msg)
        budget = self.send_timeout if timeout is None else timeout
        if queue is not None or selector is not None:
            return await self._send_to_chosen_queue(msg, budget, queue, selector, arg)
        future = self._send_soon(msg, budget, 1 + self.retry_times)
        if future is not None:
            return await future
        return await self._send_with_retries(msg, budget, 1 + self.retry_times)

    def _send_started(self, msg: Message, *, timeout: float | None = None) -> asyncio.Future[SendResult]:
        """`send` without a coroutine to await: a future of its SendResult, started now (for callers on
        another thread, the blocking facade). Same retries as `send`; validation errors are raised at
        once. Call on the loop."""
        self._validate(msg)
        budget = self.send_timeout if timeout is None else timeout
        future = self._send_soon(msg, budget, 1 + self.retry_times)
        if future is not None:
            return future
        return _GET_RUNNING_LOOP().create_task(self._send_with_retries(msg, budget, 1 + self.retry_times))

    def _resume_send(
        self,
        out: Outgoing,
        mq: MessageQueue,
        *,
        budget: float,
        start: float,
        error: Exception | None,
        chosen: bool = False,
    ) -> asyncio.Future[SendResult]:
        """The attempts after a first one made elsewhere (the blocking producer's, on its caller's
        thread) to `mq`: it failed with `error` (one of ATTEMPT_FAILURES), or was stored but not SEND_OK
        (`error` None, under retry_another_broker_when_not_store_ok). The same decision and the same retry
        loop as after a SendCall's first attempt. A `chosen` queue (the caller's, or its selector's) gets
        no other attempt, as in `send`: the failure is recorded (a route refresh after a connection
        failure) and raised. Call on the loop."""
        loop = _GET_RUNNING_LOOP()
        attempts = 1 if chosen else 1 + self.retry_times
        if error is not None and (not self._retryable(mq, start, error) or attempts < 2):
            failed: asyncio.Future[SendResult] = loop.create_future()
            failed.set_exception(error)
            return failed
        topic, prepared, flag, batch = out.topic, out.prepared, out.flag, out.batch
        coro = self._attempts(
            topic,
            out.msg_id,
            budget=budget,
            attempts=attempts,
            fixed_queue=mq if chosen else None,
            build=lambda queue: (prepared.body, self._header(queue, topic, prepared, flag, batch)),
            batch=batch,
            resume=Resume(start, 1, mq.broker_name, error),
        )
        return loop.create_task(coro)

    async def send_orderly(self, msg: Message, key: Any, *, timeout: float | None = None) -> SendResult:
        """Ordered by key: every message with the same key goes to the same queue (hash selector)."""
        return await self.send(msg, timeout=timeout, selector=select_by_hash, arg=key)

    def send_async(self, msg: Message, *, timeout: float | None = None) -> asyncio.Future[SendResult]:
        """Start sending now, return a future of its SendResult; failed attempts retry on other brokers
        (`retry_times_async`). Validation errors are raised at once. Cancelling the future stops
        retries (a request already written may still be stored)."""
        self._validate(msg)
        self._instance()
        budget = self.send_timeout if timeout is None else timeout
        future = self._send_soon(msg, budget, 1 + self.retry_times_async)
        if future is not None:
            self._pending.add(future)  # the SendCall discards it when done: no done callback needed
            return future
        task = _GET_RUNNING_LOOP().create_task(
            self._send_with_retries(msg, budget, 1 + self.retry_times_async)
        )
        track_send(self._pending, task)
        return task

    # ---- request-reply ----------------------------------------------------------------------

    async def request(self, msg: Message, timeout: float = 3.0) -> MessageExt:
        """Send `msg` as a request and wait for its reply (RocketMQ 4.6+ request-reply): the responder
        answers with `create_reply_message(request, body)`; the broker pushes the reply here. Raises
        RequestTimeoutError when no reply comes within `timeout` seconds (sending included)."""
        self._validate(msg)
        instance = self._instance()
        start = self.clock.monotonic()
        await self.find_publish_info(msg.topic)
        if msg.topic not in self._request_topics:
            # The broker finds this client's connection among its producers: make sure each broker of
            # the topic has heard our heartbeat before the reply can come back (as RocketMQ does).
            await instance.send_heartbeat_to_all()
            self._request_topics.add(msg.topic)
        correlation_id = prepare_request(msg, instance.client_id, timeout)
        future = instance.replies.expect(correlation_id)
        try:
            await self.send(msg, timeout=max(timeout - (self.clock.monotonic() - start), 0.001))
            remaining = timeout - (self.clock.monotonic() - start)
            try:
                return await asyncio.wait_for(future, max(remaining, 0))
            except TimeoutError:
                raise RequestTimeoutError(
                    f"no reply to the request {correlation_id} on {msg.topic} within {timeout}s"
                ) from None
        finally:
            instance.replies.discard(correlation_id)

    def request_async(self, msg: Message, timeout: float = 3.0) -> asyncio.Task[MessageExt]:
        """`request` as a task (validation errors are raised at once)."""
        self._validate(msg)
        self._instance()
        task = _GET_RUNNING_LOOP().create_task(self.request(msg, timeout))
        track_send(self._pending, task)
        return task

    async def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None) -> None:
        """Fire and forget: one attempt, no response awaited."""
        self._validate(msg)
        info = await self.find_publish_info(msg.topic)
        mq = queue or select_queue(info, None, self.fault)
        addr = await self._master_address(mq)
        prepared = self._prepare(msg)
        await self._instance().api.send_message_oneway(
            addr, prepared.body, self._header(mq, msg.topic, prepared, msg.flag)
        )

    async def send_batch(
        self, messages: Sequence[Message], *, timeout: float | None = None, queue: MessageQueue | None = None
    ) -> SendResult:
        """One request for many messages of one topic, stored with consecutive offsets in one queue."""
        out = self._batch(messages)
        return await self._attempts(
            out.topic,
            out.msg_id,
            budget=self.send_timeout if timeout is None else timeout,
            attempts=1 if queue is not None else 1 + self.retry_times,
            fixed_queue=queue,
            build=lambda mq: (out.prepared.body, self._header(mq, out.topic, out.prepared, batch=True)),
            batch=True,
        )

    def _batch(self, messages: Sequence[Message]) -> Outgoing:
        """One SEND_BATCH_MESSAGE for `messages` (checked as RocketMQ's batch rules want)."""
        msgs = list(messages)
        if not msgs:
            raise ClientError("a batch needs at least one message")
        topic, body, batch_props = encode_checked_batch(msgs, self._validate, self.max_message_size)
        msg_id = ",".join(m.properties[P.UNIQ_KEY] for m in msgs)
        return Outgoing(topic, msg_id, Prepared(body, 0, batch_props, 0, None), 0, True)

    # ---- internals --------------------------------------------------------------------------

    def _header(
        self, mq: MessageQueue, topic: str, prepared: Prepared, flag: int = 0, batch: bool = False
    ) -> dict[str, str]:
        return self._header_templates.header(
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

    async def _master_address(self, mq: MessageQueue) -> str:
        addr = await self._instance().find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            raise ConnectError(f"The broker[{mq.broker_name}] not exist")
        return addr

    def _cached_target(self, topic: str) -> tuple[ClientInstance, MessageQueue, str] | None:
        """The next queue of `topic` and its master's address, when both are at hand without awaiting
        (a first attempt made without a coroutine); None otherwise. Selecting moves the round robin."""
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

    def _send_soon(self, msg: Message, budget: float, attempts: int) -> asyncio.Future[SendResult] | None:
        """The first attempt sent now, without a coroutine (see send_call.py), when the route, master
        address and an open connection are at hand; None (nothing sent) when one of them needs awaiting."""
        target = self._cached_target(msg.topic)
        if target is None:
            return None
        instance, mq, addr = target
        prepared = self._prepare(msg)
        future: asyncio.Future[SendResult] = (self._loop or _GET_RUNNING_LOOP()).create_future()
        call = SendCall(
            self,
            future,
            msg,
            prepared,
            budget=budget,
            attempts=attempts,
            start=self.clock.monotonic(),
            mq=mq,
            addr=addr,
        )
        header = self._header(mq, msg.topic, prepared, msg.flag)
        if not start_send(instance.api.remoting, addr, prepared.body, header, timeout=budget, callback=call):
            return None  # no open connection yet: the coroutine path connects (the message stays prepared)
        return future

    async def _send_with_retries(self, msg: Message, budget: float, attempts: int) -> SendResult:
        prepared = self._prepare(msg)
        return await self._attempts(
            msg.topic,
            msg.properties[P.UNIQ_KEY],
            budget=budget,
            attempts=attempts,
            fixed_queue=None,
            build=lambda mq: (prepared.body, self._header(mq, msg.topic, prepared, msg.flag)),
        )

    async def _send_to_chosen_queue(
        self,
        msg: Message,
        budget: float,
        queue: MessageQueue | None,
        selector: MessageQueueSelector | None,
        arg: Any,
    ) -> SendResult:
        if queue is None:
            assert selector is not None
            queue = chosen_queue(await self.find_publish_info(msg.topic), msg, selector, arg)
        prepared = self._prepare(msg)
        return await self._attempts(
            msg.topic,
            msg.properties[P.UNIQ_KEY],
            budget=budget,
            attempts=1,
            fixed_queue=queue,
            build=lambda mq: (prepared.body, self._header(mq, msg.topic, prepared, msg.flag)),
        )

    async def _attempts(
        self,
        topic: str,
        msg_id: str,
        *,
        budget: float,
        attempts: int,
        fixed_queue: MessageQueue | None,
        build: Callable[[MessageQueue], tuple[bytes, dict[str, str]]],
        batch: bool = False,
        resume: Resume | None = None,
    ) -> SendResult:
        """The retry loop; `resume` continues a send whose first attempt(s) a SendCall made."""
        instance = self._instance()
        start = self.clock.monotonic() if resume is None else resume.start
        info = self.publish_info.get(topic)
        if info is None or not info.ok:  # the cached route needs no coroutine
            info = await self.find_publish_info(topic)
        first = 0
        last_broker: str | None = None
        last_error: Exception | None = None
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
                addr = instance.master_address(mq.broker_name) or await self._master_address(mq)
                body, header = build(mq)
                result = await instance.api.send_message(
                    addr, mq.broker_name, body, header, msg_id=msg_id, timeout=remaining, batch=batch
                )
            except ATTEMPT_FAILURES as exc:
                if not self._retryable(mq, began, exc):
                    raise
                last_error = exc
                continue
            self._record_latency(mq, began, isolation=False)
            not_stored = result.status is not SendStatus.SEND_OK
            if not_stored and self.retry_another_broker_when_not_store_ok and attempt + 1 < attempts:
                continue
            return result
        assert last_error is not None
        raise last_error

    def _retryable(self, mq: MessageQueue, began: float, exc: Exception) -> bool:
        """After a failed attempt (one of ATTEMPT_FAILURES): record it; True when another attempt may
        help (connection failures and timeouts, which also refresh the route soon; retryable codes)."""
        self._record_latency(mq, began, isolation=True)
        if isinstance(exc, BrokerError):
            return exc.code in RETRYABLE_SEND_CODES
        log.debug("send to %s failed: %s", mq, exc)
        self._refresh_route_soon(mq.topic)
        return True

    def _record_latency(self, mq: MessageQueue, began: float, *, isolation: bool) -> None:
        if not self.fault.enabled:
            return  # nothing is recorded anyway; skip the clock read
        latency_ms = int((self.clock.monotonic() - began) * 1000)
        self.fault.update_fault_item(mq.broker_name, latency_ms, isolation=isolation)

    def _refresh_route_soon(self, topic: str) -> None:
        instance = self.instance
        if instance is None:
            return
        task = _GET_RUNNING_LOOP().create_task(instance.update_topic_route(topic))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
