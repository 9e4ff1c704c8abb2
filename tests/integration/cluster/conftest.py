"""Shared pieces of the cluster tests: fast settings for real broker/namesrv processes, a recording
consumer listener, and raw reads through MQClientAPI (the test's own client instance)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from orbitmq.client.aio import (
    ClientConfig,
    ClientInstance,
    ConsumeConcurrentlyContext,
    ConsumeStatus,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
)
from orbitmq.common.errors import BrokerError, OrbitError
from orbitmq.protocol.codes import ResponseCode
from orbitmq.testing.cluster import BrokerNode, Cluster
from orbitmq.testing.drain import drain_queue

# Small segments; replication heartbeats every second; a slave syncs configs from its master every 10 s
# (first after 3 s). Brokers register every 10 s (the shortest period RocketMQ allows).
BROKER_CONF: dict[str, Any] = {
    "mappedFileSizeCommitLog": 1024 * 1024,
    "mappedFileSizeConsumeQueue": 3000 * 20,
    "haSendHeartbeatInterval": 1000,
    "haHousekeepingInterval": 5000,
    "registerNameServerPeriod": 10000,
}
NAMESRV_CONF: dict[str, Any] = {"scanNotActiveBrokerInterval": 500}


def cluster(workdir: Path, **options: Any) -> Cluster:
    options.setdefault("broker_conf", BROKER_CONF)
    options.setdefault("namesrv_conf", NAMESRV_CONF)
    return Cluster(workdir, **options)


def client_config(namesrv_addrs: list[str], **overrides: float) -> ClientConfig:
    cfg = ClientConfig(
        namesrv_addrs=list(namesrv_addrs),
        poll_namesrv_interval=0.5,
        heartbeat_interval=1.0,
        rebalance_interval=1.0,
        persist_offset_interval=0.5,
    )
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
        await asyncio.sleep(0.1)


class Recorder:
    """A concurrent listener that records bodies; `gate` (when set) holds consumption until opened."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.bodies: list[bytes] = []
        self.gate = gate
        self.parked: set[tuple[str, int]] = set()  # (broker, queue id) of deliveries waiting at the gate

    async def __call__(self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        if self.gate is not None and not self.gate.is_set():
            self.parked |= {(ctx.message_queue.broker_name, ctx.message_queue.queue_id) for _ in msgs}
            await self.gate.wait()
        self.bodies += [m.body for m in msgs]
        return ConsumeStatus.CONSUME_SUCCESS


class Tool:
    """Topic creation and raw reads from a chosen broker (a slave included)."""

    def __init__(self, namesrv_addrs: list[str]) -> None:
        self.instance = ClientInstance(client_config(namesrv_addrs))
        self.api = self.instance.api

    async def close(self) -> None:
        await self.instance.shutdown()

    async def create_topic(self, topic: str, masters: list[BrokerNode], queues: int = 4) -> None:
        for m in masters:
            await self.api.create_topic(m.address, topic, read_queue_nums=queues, write_queue_nums=queues)

        async def routed() -> bool:
            route = await self.api.get_topic_route(topic)
            return route is not None and len(route.queue_datas) == len(masters)

        await eventually(routed, what=f"route of {topic}")

    async def max_offsets(self, broker: BrokerNode, topic: str, queues: int = 4) -> list[int]:
        out = []
        for q in range(queues):
            out.append(
                await self.api.get_max_offset(broker.address, MessageQueue(topic, broker.broker_name, q))
            )
        return out

    async def read_topic(self, broker: BrokerNode, topic: str, queues: int = 4) -> list[MessageExt]:
        """Every message of the topic's queues on `broker`; waits (up to 15 s) until `broker` knows the
        topic: a slave learns topic configs from its master every 10 s (first after 3 s)."""
        out: list[MessageExt] = []

        async def read() -> bool:
            out.clear()
            try:
                for q in range(queues):
                    out.extend(await self.read_queue(broker, topic, q))
            except BrokerError as exc:
                if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                    return False
                raise
            return True

        await eventually(read, timeout=15, what=f"{broker.name} to know {topic}")
        return out

    async def read_queue(self, broker: BrokerNode, topic: str, queue_id: int) -> list[MessageExt]:
        """Every message of one queue on `broker`, from offset 0, without long polling."""
        mq = MessageQueue(topic, broker.broker_name, queue_id)
        return await drain_queue(self.api, broker.address, mq, group="cluster-test-reader")


def commit_log_files(broker: BrokerNode) -> dict[str, bytes]:
    directory = broker.store_dir / "commitlog"
    if not directory.exists():
        return {}
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


async def shutdown_quietly(client: PushConsumer | Producer) -> None:
    """Shut a client down even when a broker it knew is dead.

    PushConsumer.shutdown persists offsets first and raises if that broker is unreachable, leaving its
    ClientInstance running; here the instance is closed anyway."""
    try:
        await client.shutdown()
    except OrbitError:
        if client.instance is not None:
            await client.instance.shutdown()
