"""Shared pieces of the power-cut tests: a send stream that records every acknowledgement, and raw
reads of what a broker holds after recovery (every queue from offset 0, and lookups by key)."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from pathlib import Path

from orbitmq.client.aio import ClientConfig, ClientInstance, Message, Producer, SendStatus
from orbitmq.common.errors import BrokerError, OrbitError
from orbitmq.message.model import MessageExt, MessageQueue
from orbitmq.testing import write_properties
from orbitmq.testing.cluster import Cluster
from orbitmq.testing.drain import drain_queue
from orbitmq.testing.powerloss import PowerLossDisk

QUEUES = 4


@dataclass(frozen=True)
class Ack:
    key: str
    body: bytes
    msg_id: str  # UNIQ_KEY
    queue_id: int
    queue_offset: int
    sent_at: float = 0.0  # the loop's clock when the send started


def client_config(namesrv_addr: str) -> ClientConfig:
    return ClientConfig(namesrv_addrs=[namesrv_addr], poll_namesrv_interval=0.5, heartbeat_interval=1.0)


async def create_topic(namesrv_addr: str, broker_addr: str, topic: str) -> None:
    instance = ClientInstance(client_config(namesrv_addr))
    try:
        await instance.api.create_topic(broker_addr, topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        deadline = asyncio.get_running_loop().time() + 20
        while (await instance.api.get_topic_route(topic)) is None:
            assert asyncio.get_running_loop().time() < deadline, f"no route for {topic}"
            await asyncio.sleep(0.1)
    finally:
        await instance.shutdown()


def sync_master_on_disk(tmp_path: Path, disk: PowerLossDisk, **master_props: object) -> Cluster:
    """One SYNC_MASTER with its store on the power-loss disk (and `master_props`), one slave on the
    ordinary disk, one nameserver."""
    c = Cluster(
        tmp_path,
        groups=1,
        slaves=1,
        namesrvs=1,
        master_role="SYNC_MASTER",
        broker_conf={
            "mappedFileSizeCommitLog": 256 * 1024,
            "mappedFileSizeConsumeQueue": 1000 * 20,
            "haSendHeartbeatInterval": 1000,
        },
        namesrv_conf={"scanNotActiveBrokerInterval": 500},
    )
    master = c.master("broker-a")
    master.props.update(storePathRootDir=disk.mountpoint / "store", **master_props)
    write_properties(master.conf_path, master.props)
    return c


async def wait_topic_on(instance: ClientInstance, broker_addr: str, topic: str, timeout: float = 20) -> None:
    """Until `broker_addr` serves `topic` (a slave copies its master's topic configs every 10 s, the
    first time after 3 s)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            await read_queues(instance, broker_addr, "broker-a", topic)
            return
        except BrokerError:
            assert asyncio.get_running_loop().time() < deadline, f"{broker_addr} never learned {topic}"
            await asyncio.sleep(0.2)


class SendStream:
    """Concurrent senders recording each SEND_OK; `await wait(n)` then kill the broker, then `stop()`."""

    def __init__(self, namesrv_addr: str, topic: str, run: str, senders: int = 8) -> None:
        self.topic = topic
        self.run = run
        self.acks: list[Ack] = []
        self.producer = Producer(
            f"powercut-{run}", config=client_config(namesrv_addr), retry_times=0, send_timeout=5.0
        )
        self._counter = itertools.count()
        self._senders = senders
        self._tasks: list[asyncio.Task[None]] = []
        self._progress = asyncio.Event()

    async def start(self) -> None:
        await self.producer.start()
        self._tasks = [asyncio.create_task(self._send_loop()) for _ in range(self._senders)]

    async def _send_loop(self) -> None:
        while True:
            n = next(self._counter)
            key = f"{self.run}-{n}"
            body = f"power-cut {key} ".encode() * 4
            sent_at = asyncio.get_running_loop().time()
            try:
                result = await self.producer.send(Message.create(self.topic, body, keys=key))
            except (OrbitError, TimeoutError, OSError):
                return  # the broker is gone (refused, closed, or no answer before the send timeout)
            if result.status is SendStatus.SEND_OK:
                q = result.message_queue.queue_id
                self.acks.append(Ack(key, body, result.msg_id, q, result.queue_offset, sent_at))
                self._progress.set()

    async def wait(self, acks: int, timeout: float = 30.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.acks) < acks:
            remaining = deadline - asyncio.get_running_loop().time()
            assert remaining > 0, f"only {len(self.acks)} of {acks} acks in {timeout}s"
            assert any(not t.done() for t in self._tasks), "every sender stopped"
            self._progress.clear()
            try:
                await asyncio.wait_for(self._progress.wait(), remaining)
            except TimeoutError:
                pass

    async def stop(self) -> list[Ack]:
        """After the broker died: let the senders see the failure (an answer already received still
        counts: the broker sent SEND_OK), then shut the producer down."""
        _, pending = await asyncio.wait(self._tasks, timeout=10)
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        try:
            await self.producer.shutdown()
        except OrbitError:
            pass
        return self.acks


async def read_queues(
    instance: ClientInstance, broker_addr: str, broker_name: str, topic: str
) -> dict[int, list[MessageExt]]:
    """Every message of each queue, pulled from offset 0 as a consumer would."""
    out: dict[int, list[MessageExt]] = {}
    for q in range(QUEUES):
        mq = MessageQueue(topic, broker_name, q)
        out[q] = await drain_queue(instance.api, broker_addr, mq, group="powercut-reader")
    return out


def check_queues(queues: dict[int, list[MessageExt]]) -> dict[tuple[int, int], MessageExt]:
    """Queue offsets are 0..n-1 in each queue, each once, in commit-log order; returns (q, offset) -> msg."""
    at: dict[tuple[int, int], MessageExt] = {}
    for q, msgs in queues.items():
        offsets = [m.queue_offset for m in msgs]
        assert offsets == list(range(len(msgs))), f"queue {q}: offsets {offsets[:20]}..."
        physical = [m.commit_log_offset for m in msgs]
        assert physical == sorted(physical), f"queue {q} out of commit-log order"
        for m in msgs:
            at[(q, m.queue_offset)] = m
    return at


def missing_acks(acks: list[Ack], at: dict[tuple[int, int], MessageExt]) -> list[Ack]:
    """Acknowledged messages not found where their send result said they were."""
    lost = []
    for ack in acks:
        m = at.get((ack.queue_id, ack.queue_offset))
        if m is None or m.unique_id != ack.msg_id or m.body != ack.body or m.keys != ack.key:
            lost.append(ack)
    return lost
