"""Redis Streams as a bench peer: redis-server (appendonly yes, appendfsync everysec) driven by redis-py.

Loaded by `orbitmq bench` (orbitmq.bench.peers); the harness stops the server by PID.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orbitmq.bench.driver import Driver, DriverUnavailable, OnBodies, ServerHandle, launch_server

NAME = "redis"
BINARY = "redis-server"
READ_BATCH = 1000
FIELD = b"d"


def _argv(binary: str, port: int, data: Path) -> list[str]:
    # redis-server cannot bind port 0 (it means "no TCP"): launch_server gives a port free a moment ago.
    return [
        binary,
        "--bind", "127.0.0.1",
        "--port", str(port),
        "--dir", str(data),
        "--appendonly", "yes",
        "--appendfsync", "everysec",
        "--save", "",
        "--daemonize", "no",
        "--protected-mode", "yes",
    ]  # fmt: skip


def start_server(workdir: Path) -> ServerHandle:
    return launch_server(NAME, BINARY, workdir, _argv)


class RedisDriver(Driver):
    """W1 = XADD awaited one at a time per sender (one pooled connection per sender), W2 pipelined = a
    non-transactional pipeline of XADDs per window, W2 batch = the same with the batch size, W3/W4 = XREAD
    of up to 1,000 entries per call, blocking 100 ms when caught up; the consumer's position is the last
    entry id it read (XREAD has no server-side commit; XREADGROUP + XACK would add a round trip per batch).
    """

    system = NAME

    def __init__(self, server: ServerHandle) -> None:
        super().__init__(server)
        host, _, port = server.address.rpartition(":")
        self.host, self.port = host, int(port)
        self.redis: Any = None

    async def open(self) -> None:
        try:
            import redis.asyncio
        except ImportError as exc:
            raise DriverUnavailable("redis-py not installed (pip install -e '.[bench]')") from exc
        self.redis = redis.asyncio.Redis(host=self.host, port=self.port, max_connections=512)
        await self.redis.ping()

    async def close(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()

    async def create_topic(self, topic: str, queues: int) -> None:
        # A stream springs into existence with its first XADD; `queues` does not apply.
        await self.redis.delete(topic)

    async def delete_topic(self, topic: str) -> None:
        await self.redis.delete(topic)

    async def send(self, topic: str, body: bytes) -> None:
        await self.redis.xadd(topic, {FIELD: body})

    async def send_window(self, topic: str, bodies: Sequence[bytes]) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for body in bodies:
            pipe.xadd(topic, {FIELD: body})
        await pipe.execute()

    async def consume(self, topic: str, group: str, on_bodies: OnBodies, stop: asyncio.Event) -> None:
        last_id: bytes | str = "0-0"
        # A connection of its own, so a blocking XREAD never holds up the senders' pool.
        reader = self.redis.client()
        try:
            while not stop.is_set():
                reply = await reader.xread({topic: last_id}, count=READ_BATCH, block=100)
                if not reply:
                    continue
                entries = reply[0][1]
                if entries:
                    last_id = entries[-1][0]
                    on_bodies([fields[FIELD] for _, fields in entries])
        finally:
            await reader.aclose()


def make_driver(server: ServerHandle) -> Driver:
    return RedisDriver(server)
