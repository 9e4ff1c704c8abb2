"""NATS JetStream as a bench peer: a nats-server with file storage in a temp dir, driven by nats-py.

Loaded by `orbitmq bench` (orbitmq.bench.peers); the harness stops the server by PID.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orbitmq.bench.driver import Driver, DriverUnavailable, OnBodies, ServerHandle, launch_server

NAME = "nats"
BINARY = "nats-server"
FETCH_BATCH = 256


def start_server(workdir: Path) -> ServerHandle:
    return launch_server(
        NAME,
        BINARY,
        workdir,
        lambda binary, port, store: [binary, "-js", "-sd", str(store), "-a", "127.0.0.1", "-p", str(port)],
    )


class NatsDriver(Driver):
    """W1 = js.publish (waits for the PubAck), W2 pipelined = publish_async then wait for every ack, W2
    batch = the same (JetStream has no batch publish), W3/W4 = a durable pull consumer fetching up to 256
    messages per request with AckPolicy.ALL, acknowledging the last message of each fetch (the equivalent
    of a committed offset).
    """

    system = NAME

    def __init__(self, server: ServerHandle) -> None:
        super().__init__(server)
        self.address = server.address
        self.nc: Any = None
        self.js: Any = None

    async def open(self) -> None:
        try:
            import nats
        except ImportError as exc:
            raise DriverUnavailable("nats-py not installed (pip install -e '.[bench]')") from exc
        self.nc = await nats.connect(f"nats://{self.address}", max_reconnect_attempts=0)
        self.js = self.nc.jetstream()

    async def close(self) -> None:
        if self.nc is not None:
            await self.nc.close()

    async def create_topic(self, topic: str, queues: int) -> None:
        from nats.js.api import StorageType

        # One stream per topic; JetStream has no queues (partitions), so `queues` does not apply.
        await self.js.add_stream(name=topic, subjects=[topic], storage=StorageType.FILE)

    async def delete_topic(self, topic: str) -> None:
        with contextlib.suppress(Exception):
            await self.js.delete_stream(topic)

    async def send(self, topic: str, body: bytes) -> None:
        await self.js.publish(topic, body, stream=topic)

    async def send_window(self, topic: str, bodies: Sequence[bytes]) -> None:
        futures = [await self.js.publish_async(topic, body, stream=topic) for body in bodies]
        await asyncio.gather(*futures)

    async def consume(self, topic: str, group: str, on_bodies: OnBodies, stop: asyncio.Event) -> None:
        import nats.errors
        from nats.js.api import AckPolicy, ConsumerConfig

        sub = await self.js.pull_subscribe(
            topic, durable=group, stream=topic, config=ConsumerConfig(ack_policy=AckPolicy.ALL)
        )
        try:
            while not stop.is_set():
                try:
                    msgs = await sub.fetch(FETCH_BATCH, timeout=0.5)
                except (nats.errors.TimeoutError, TimeoutError):
                    continue
                if msgs:
                    on_bodies([msg.data for msg in msgs])
                    await msgs[-1].ack()
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


def make_driver(server: ServerHandle) -> Driver:
    return NatsDriver(server)
