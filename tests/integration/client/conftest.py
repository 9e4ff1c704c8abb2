"""Real name server + broker processes for the client integration tests, and small async helpers."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from orbitmq.client.blocking import Producer as BlockingProducer
from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.message.model import MessageExt, MessageQueue
from orbitmq.testing import ServerProcess, start_broker, start_namesrv
from orbitmq.testing.drain import drain_queue

# Short delay levels so retry/DLQ/delay tests take seconds (level n = n seconds up to 18).
SHORT_DELAY_LEVELS = " ".join(f"{i}s" for i in range(1, 19))

_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


def broker_conf() -> dict[str, object]:
    # Small store files: the defaults (1 GiB commit-log segments) are allocated in full on disk.
    return {
        "messageDelayLevel": SHORT_DELAY_LEVELS,
        "mappedFileSizeCommitLog": 16 * 1024 * 1024,
        "mappedFileSizeConsumeQueue": 20 * 6000,
    }


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    with start_namesrv(tmp_path) as ns:
        yield ns


@pytest.fixture
def broker(tmp_path: Path, namesrv: ServerProcess) -> Iterator[ServerProcess]:
    with start_broker(tmp_path, namesrv.address, expect=("broker",), **broker_conf()) as b:
        yield b


@pytest.fixture
def broker_b(tmp_path: Path, namesrv: ServerProcess) -> Iterator[ServerProcess]:
    with start_broker(
        tmp_path, namesrv.address, broker_name="broker-b", expect=("broker",), **broker_conf()
    ) as b:
        yield b


def client_config(namesrv: ServerProcess, **overrides: float) -> ClientConfig:
    """Fast periodic tasks, so tests see rebalances and commits within seconds."""
    cfg = ClientConfig(namesrv_addrs=[namesrv.address], rebalance_interval=1.0, persist_offset_interval=0.5)
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


async def eventually(
    check: Callable[[], bool | Awaitable[bool]], timeout: float = 20.0, what: str = ""
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or check}")
        await asyncio.sleep(0.05)


class Admin:
    """Topic creation and raw reads through MQClientAPI (the test's own client instance)."""

    def __init__(self, namesrv: ServerProcess) -> None:
        self.instance = ClientInstance(client_config(namesrv))

    async def __aenter__(self) -> Admin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.instance.shutdown()

    async def create_topic(self, topic: str, brokers: list[ServerProcess], queues: int = 4) -> None:
        for b in brokers:
            await self.instance.api.create_topic(
                b.broker_addr, topic, read_queue_nums=queues, write_queue_nums=queues
            )

        async def routed() -> bool:
            route = await self.instance.api.get_topic_route(topic)
            return route is not None and len(route.queue_datas) == len(brokers)

        await eventually(routed, what=f"route of {topic}")

    async def read_queue(self, mq: MessageQueue, *, group: str = "test-reader") -> list[MessageExt]:
        """Every message of a queue, from offset 0, without long polling."""
        await self.instance.update_topic_route(mq.topic)
        addr = self.instance.master_address(mq.broker_name)
        assert addr is not None
        return await drain_queue(self.instance.api, addr, mq, group=group)

    async def read_topic(self, topic: str) -> list[MessageExt]:
        await self.instance.update_topic_route(topic)
        route = self.instance.topic_routes[topic]
        out: list[MessageExt] = []
        for qd in route.queue_datas:
            for q in range(qd.read_queue_nums):
                out += await self.read_queue(MessageQueue(topic, qd.broker_name, q))
        return out


@contextlib.asynccontextmanager
async def topic_and_blocking_producer(
    namesrv: ServerProcess, broker: ServerProcess, prefix: str, *, queues: int = 4
) -> AsyncIterator[tuple[Admin, str, BlockingProducer]]:
    """A new topic on `broker`, an admin to read it back, and a blocking Producer (not started) of a new
    group, with the tests' client config."""
    topic = unique(prefix)
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=queues)
        yield admin, topic, BlockingProducer(unique(prefix + "Group"), config=client_config(namesrv))
