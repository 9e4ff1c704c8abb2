"""The "orbitmq" driver: orbitmq's own asyncio client library (Producer, PushConsumer).

This is what a Python team would use, so it is the figure compared with the peers' Python clients.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from orbitmq.bench.driver import Driver, OnBodies, ServerHandle
from orbitmq.bench.raw_driver import RawDriver
from orbitmq.client.aio import ConsumeFromWhere, ConsumeStatus, Message, Producer, PushConsumer
from orbitmq.client.config import ClientConfig


def client_available() -> bool:
    return True


class ClientDriver(Driver):
    """Clients run with their RocketMQ defaults (push consumer: 32 per pull, 20 concurrent listener calls,
    one message per call, offsets committed). Topics are made with raw admin requests
    (UPDATE_AND_CREATE_TOPIC, as mqadmin does), outside any measured window.
    """

    system = "orbitmq"

    def __init__(
        self, namesrv: str, server: ServerHandle | None = None, *, busy_poll_us: float | None = None
    ) -> None:
        super().__init__(server)
        self.namesrv = namesrv
        self.busy_poll_us = busy_poll_us
        self.admin = RawDriver(namesrv, server)
        self.producer: Producer | None = None

    async def open(self) -> None:
        await self.admin.open()
        # (None: the client's own default)
        config = ClientConfig() if self.busy_poll_us is None else ClientConfig(busy_poll_us=self.busy_poll_us)
        self.producer = Producer(f"bench_producer_{uuid.uuid4().hex[:8]}", self.namesrv, config=config)
        await self.producer.start()

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.shutdown()
        await self.admin.close()

    @property
    def _producer(self) -> Producer:
        if self.producer is None:
            raise RuntimeError("driver not opened")
        return self.producer

    async def create_topic(self, topic: str, queues: int) -> None:
        await self.admin.create_topic(topic, queues)

    async def delete_topic(self, topic: str) -> None:
        await self.admin.delete_topic(topic)

    async def send(self, topic: str, body: bytes) -> None:
        await self._producer.send(Message(topic, body))

    async def send_window(self, topic: str, bodies: Sequence[bytes]) -> None:
        producer = self._producer
        await asyncio.gather(*[producer.send_async(Message(topic, body)) for body in bodies])

    async def send_batch(self, topic: str, bodies: Sequence[bytes]) -> None:
        await self._producer.send_batch([Message(topic, body) for body in bodies])

    async def consume(self, topic: str, group: str, on_bodies: OnBodies, stop: asyncio.Event) -> None:
        consumer = PushConsumer(
            group, self.namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        )
        consumer.subscribe(topic, "*")

        # A coroutine listener: the asyncio client runs it on the loop; a plain function would be
        # handed to the consume thread pool, one thread hop per message.
        async def listener(messages: Sequence[Any], _context: Any) -> ConsumeStatus:
            on_bodies([m.body for m in messages])
            return ConsumeStatus.CONSUME_SUCCESS

        consumer.register_listener(listener)
        await consumer.start()
        try:
            await stop.wait()
        finally:
            await consumer.shutdown()
