"""The asyncio Producer: sync (awaited), async (task) and oneway sends, batches, ordered sends. The
sends themselves are its `SendPath` (send_path.py); this class is the public API over it and the
producer's part in `ClientInstance`. Caller mistakes raise ClientError before any byte is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final, Unpack

from orbitmq.client.instance import ClientInstance
from orbitmq.client.options import ProducerKeywords, ProducerOptions, client_setup
from orbitmq.client.request_reply import prepare_request
from orbitmq.client.results import SendResult
from orbitmq.client.routing import TopicPublishInfo, select_queue
from orbitmq.client.send_path import SendPath, chosen_queue
from orbitmq.client.send_request import MessageQueueSelector, select_by_hash
from orbitmq.common.errors import RequestTimeoutError
from orbitmq.message.model import Message, MessageExt, MessageQueue

# A static: compiled, `asyncio.get_running_loop` is a module attribute lookup per send.
_GET_RUNNING_LOOP: Final = asyncio.get_running_loop


class Producer:
    """Sends messages; `async with Producer(...) as p: await p.send(msg)`.

    The settings are `ProducerOptions` (RocketMQ's DefaultMQProducer settings in snake_case, plus
    orbitmq's own), given as `options=` or as keywords of the same names; `instance`, `config`,
    `access_key`, `secret_key`, `security_token`, `tls` and `clock` as for every client."""

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv_addrs: str | Sequence[str] | None = None,
        *,
        options: ProducerOptions | None = None,
        **keywords: Unpack[ProducerKeywords],
    ) -> None:
        setup, self.options = client_setup(group, namesrv_addrs, options or ProducerOptions(), keywords)
        self.group = group
        self._config = setup.config
        self._own_instance = setup.instance is None
        self.clock = setup.clock
        self.path = SendPath(group, self.options, setup.clock, transactional=False)
        self.path.instance = setup.instance
        self._request_topics: set[str] = set()  # topics whose brokers heard us before a request

    @property
    def instance(self) -> ClientInstance | None:
        return self.path.instance

    @property
    def started(self) -> bool:
        return self.path.started

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        path = self.path
        if path.started:
            return
        if path.instance is None:
            assert self._config is not None
            path.instance = ClientInstance(self._config)
        path.instance.register_producer(self)
        await path.instance.start()
        path.loop = _GET_RUNNING_LOOP()
        path.started = True

    async def shutdown(self) -> None:
        path = self.path
        if not path.started:
            return
        path.started = False
        if path.pending:
            await asyncio.gather(*path.pending, return_exceptions=True)
        assert path.instance is not None
        await path.instance.unregister_producer(self.group)
        if self._own_instance:
            await path.instance.shutdown()

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # ---- ProducerInner ----------------------------------------------------------------------

    def publish_topics(self) -> set[str]:
        return set(self.path.publish_info)

    def update_topic_publish_info(self, topic: str, route: Any) -> None:
        publish_info = self.path.publish_info
        info = TopicPublishInfo.from_route(topic, route)
        old = publish_info.get(topic)
        if old is not None:
            info.counter = old.counter
        publish_info[topic] = info

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return list((await self.path.route(topic)).message_queues)

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
        path = self.path
        path.validate(msg)
        budget = path.send_timeout if timeout is None else timeout
        if queue is not None or selector is not None:
            if queue is None:
                assert selector is not None
                queue = chosen_queue(await path.route(msg.topic), msg, selector, arg)
            return await path.send_with_retries(msg, budget, 1, queue)
        future = path.send_soon(msg, budget, path.attempts_sync)
        if future is not None:
            return await future
        return await path.send_with_retries(msg, budget, path.attempts_sync)

    async def send_orderly(self, msg: Message, key: Any, *, timeout: float | None = None) -> SendResult:
        """Ordered by key: every message with the same key goes to the same queue (hash selector)."""
        return await self.send(msg, timeout=timeout, selector=select_by_hash, arg=key)

    def send_async(self, msg: Message, *, timeout: float | None = None) -> asyncio.Future[SendResult]:
        """Start sending now, return a future of its SendResult; failed attempts retry on other brokers
        (`retry_times_async`). Validation errors are raised at once. Cancelling the future stops
        retries (a request already written may still be stored)."""
        path = self.path
        path.validate(msg)
        path.require_instance()
        budget = path.send_timeout if timeout is None else timeout
        future = path.send_soon(msg, budget, path.attempts_async)
        if future is not None:
            path.pending.add(future)  # the SendCall discards it when done: no done callback needed
            return future
        task = _GET_RUNNING_LOOP().create_task(path.send_with_retries(msg, budget, path.attempts_async))
        path.track(task)
        return task

    # ---- request-reply ----------------------------------------------------------------------

    async def request(self, msg: Message, timeout: float = 3.0) -> MessageExt:
        """Send `msg` as a request and wait for its reply (RocketMQ 4.6+ request-reply): the responder
        answers with `create_reply_message(request, body)`; the broker pushes the reply here. Raises
        RequestTimeoutError when no reply comes within `timeout` seconds (sending included)."""
        path = self.path
        path.validate(msg)
        instance = path.require_instance()
        start = self.clock.monotonic()
        await path.route(msg.topic)
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
        self.path.validate(msg)
        self.path.require_instance()
        task = _GET_RUNNING_LOOP().create_task(self.request(msg, timeout))
        self.path.track(task)
        return task

    async def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None) -> None:
        """Fire and forget: one attempt, no response awaited."""
        path = self.path
        path.validate(msg)
        info = await path.route(msg.topic)
        mq = queue or select_queue(info, None, path.fault)
        addr = await path.master_address(mq)
        prepared = path.prepare(msg)
        await path.require_instance().api.send_message_oneway(
            addr, prepared.body, path.header(mq, msg.topic, prepared, msg.flag)
        )

    async def send_batch(
        self, messages: Sequence[Message], *, timeout: float | None = None, queue: MessageQueue | None = None
    ) -> SendResult:
        """One request for many messages of one topic, stored with consecutive offsets in one queue."""
        path = self.path
        budget = path.send_timeout if timeout is None else timeout
        attempts = 1 if queue is not None else path.attempts_sync
        return await path.attempts(path.batch(messages), budget, attempts, queue)
