"""A broker whose store fills a small file system (issue 38, item 1).

A write into an mmap'd page the file system cannot back is a SIGBUS that kills the process without a
log line. The broker must refuse sends (SERVICE_NOT_AVAILABLE, "disk is full") before that, keep serving
pulls, key queries and admin, lose nothing it acknowledged, restart on the full disk, keep its config
files whole when it cannot write them, and take sends again once there is space.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orbitmq.client.aio import ClientConfig, ClientInstance, Message, Producer, SendResult, SendStatus
from orbitmq.common.errors import BrokerError
from orbitmq.message.model import MessageQueue
from orbitmq.protocol.codes import ResponseCode
from orbitmq.testing import ServerProcess, start_broker, start_namesrv
from orbitmq.testing.drain import drain_queue

from .conftest import MIB, SmallDisk

pytestmark = pytest.mark.slow

TOPIC = "FullDisk"
QUEUES = 4
BODY = 4096
DISK_MIB = 48
BALLAST = 12 * MIB


def broker_conf(store: Path) -> dict[str, Any]:
    return {
        "storePathRootDir": store,
        "mappedFileSizeCommitLog": 4 * MIB,
        "mappedFileSizeConsumeQueue": 20 * 20_000,
        "maxHashSlotNum": 5_000,
        "maxIndexNum": 20_000,
        # Nothing acknowledged may go: no expiry, no forced cleaning. (The disk check of retention runs
        # every 10 s, retentionCheckInterval: much less than it takes to fill the disk.)
        "fileReservedTime": 1000,
        "cleanFileForciblyEnable": "false",
    }


def client_config(ns: ServerProcess) -> ClientConfig:
    return ClientConfig(namesrv_addrs=[ns.address], poll_namesrv_interval=0.5)


async def send_until_refused(
    producer: Producer, limit: int
) -> tuple[list[tuple[SendResult, bytes]], BrokerError]:
    """Sequential sends of distinct bodies until the broker refuses one; the acks and the refusal."""
    acked: list[tuple[SendResult, bytes]] = []
    for n in range(limit):
        body = f"{n:08d}".encode() + os.urandom(BODY - 8)  # (random: the client compresses a pattern)
        try:
            result = await producer.send(Message.create(TOPIC, body, keys=f"key-{n}"))
        except BrokerError as refused:
            return acked, refused
        assert result.status is SendStatus.SEND_OK
        acked.append((result, body))
    raise AssertionError(f"{limit} sends of {BODY} bytes on a {DISK_MIB} MiB disk were all taken")


async def check_all_there(
    instance: ClientInstance, addr: str, acked: list[tuple[SendResult, bytes]], *, first_key: bool = True
) -> None:
    held: dict[tuple[int, int], bytes] = {}
    for q in range(QUEUES):
        msgs = await drain_queue(instance.api, addr, MessageQueue(TOPIC, "broker-a", q), group="reader")
        held.update({(q, m.queue_offset): m.body for m in msgs})
    lost = [r.msg_id for r, body in acked if held.get((r.message_queue.queue_id, r.queue_offset)) != body]
    assert lost == [], f"{len(lost)} of {len(acked)} acknowledged messages missing"
    # The index: the first and the last acknowledged message by key. (After a kill -9 the index is
    # rebuilt from the checkpoint on, as RocketMQ's is with messageIndexSafe=false: the first may be gone.)
    for _, body in (acked[0], acked[-1]) if first_key else (acked[-1],):
        key = f"key-{int(body[:8])}"
        found = await instance.api.query_message(addr, TOPIC, key, max_num=4, begin_ms=0, end_ms=1 << 62)
        assert [m.body for m in found] == [body]


async def clients(ns: ServerProcess, broker: ServerProcess, group: str) -> tuple[ClientInstance, Producer]:
    """A client instance (raw requests) and a started producer, with the topic created."""
    instance = ClientInstance(client_config(ns))
    producer = Producer(group, config=client_config(ns), retry_times=0, send_timeout=10)
    await instance.api.create_topic(
        broker.broker_addr, TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES
    )
    await producer.start()
    return instance, producer


async def expect_refused(producer: Producer) -> BrokerError:
    with pytest.raises(BrokerError) as refused:
        await producer.send(Message.create(TOPIC, b"x" * BODY))
    return refused.value


@pytest.mark.parametrize("kind", ["tmpfs", "ext4"])
async def test_a_full_disk_refuses_sends_and_keeps_everything_else(
    tmp_path: Path, small_disk: Callable[..., SmallDisk], kind: str
) -> None:
    disk = small_disk(DISK_MIB, kind)
    ballast = disk.ballast(BALLAST)  # (deleted at the end: the space that comes back)
    store = disk.path / "store"
    conf = broker_conf(store)
    async with asyncio.timeout(240):
        with start_namesrv(tmp_path) as ns:
            broker = start_broker(tmp_path, ns.address, **conf)
            instance, producer = await clients(ns, broker, "full-disk")
            try:
                acked, refused = await send_until_refused(producer, limit=DISK_MIB * MIB // BODY)
                # Refused with RocketMQ's code and words, before the disk was full, by a live broker.
                assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
                assert "the broker's disk is full [CL:" in (refused.remark or "")
                assert broker.is_running()
                assert disk.free_bytes() >= 2 * MIB, "the broker filled the disk before refusing"
                # (at most a commit-log segment, the queue and index files and the 10 % left free)
                assert len(acked) * BODY >= 0.9 * disk.total_bytes() - BALLAST - 12 * MIB, (
                    f"refused early: {len(acked)}"
                )
                assert (await expect_refused(producer)).code == ResponseCode.SERVICE_NOT_AVAILABLE

                # Pulls, key queries and admin still work; nothing acknowledged is missing.
                await check_all_there(instance, broker.broker_addr, acked)
                await instance.api.create_topic(
                    broker.broker_addr, "AfterFull", read_queue_nums=1, write_queue_nums=1
                )

                # A config write on a disk with no byte left fails and keeps the old file whole.
                disk.fill()
                topics_json = store / "config" / "topics.json"
                before = json.loads(topics_json.read_bytes())
                with pytest.raises(BrokerError):
                    await instance.api.create_topic(
                        broker.broker_addr, "NoRoomForMe", read_queue_nums=1, write_queue_nums=1
                    )
                after = json.loads(topics_json.read_bytes())
                assert "AfterFull" in after["topicConfigTable"]
                assert after["topicConfigTable"].keys() == before["topicConfigTable"].keys()
                assert not [p for p in topics_json.parent.iterdir() if p.name.endswith(".tmp")]
            finally:
                await producer.shutdown()
                await instance.shutdown()
                broker.kill()

            # A restart on the full disk (kill -9: recovery runs) serves every acknowledged message.
            assert disk.free_bytes() < MIB
            broker = start_broker(tmp_path, ns.address, **conf)
            instance = ClientInstance(client_config(ns))
            producer = Producer("full-disk-2", config=client_config(ns), retry_times=0, send_timeout=10)
            try:
                await check_all_there(instance, broker.broker_addr, acked, first_key=False)
                await producer.start()
                assert (await expect_refused(producer)).code == ResponseCode.SERVICE_NOT_AVAILABLE

                # Space comes back (the filler and the ballast go): sends are taken again.
                os.unlink(disk.filler)
                os.unlink(ballast)
                deadline = asyncio.get_running_loop().time() + 20
                while True:
                    try:
                        result = await producer.send(Message.create(TOPIC, b"space is back", keys="back"))
                        break
                    except BrokerError as exc:
                        assert exc.code == ResponseCode.SERVICE_NOT_AVAILABLE
                        assert asyncio.get_running_loop().time() < deadline, "sends stayed refused"
                        await asyncio.sleep(0.3)
                assert result.status is SendStatus.SEND_OK
                await check_all_there(instance, broker.broker_addr, acked, first_key=False)
            finally:
                await producer.shutdown()
                await instance.shutdown()
                broker.stop()


async def test_expired_files_are_cleaned_before_sends_are_refused(
    tmp_path: Path, small_disk: Callable[..., SmallDisk]
) -> None:
    """Every segment is expired at once (fileReservedTime=0): above diskMaxUsedSpaceRatio (75 %) retention
    deletes the oldest, so a stream of 2.5 disks' worth of sends is taken without one refusal."""
    disk = small_disk(DISK_MIB)
    conf = broker_conf(disk.path / "store") | {"fileReservedTime": 0, "retentionCheckInterval": 200}
    async with asyncio.timeout(240):
        with start_namesrv(tmp_path) as ns, start_broker(tmp_path, ns.address, **conf) as broker:
            instance, producer = await clients(ns, broker, "cleaned")
            try:
                sends = 5 * DISK_MIB * MIB // BODY // 2
                for n in range(sends):
                    body = f"{n:08d}".encode() + os.urandom(BODY - 8)
                    result = await producer.send(Message.create(TOPIC, body, keys=f"key-{n}"))
                    assert result.status is SendStatus.SEND_OK
                assert disk.used_ratio() <= 0.9
                found = await instance.api.query_message(
                    broker.broker_addr, TOPIC, f"key-{sends - 1}", max_num=4, begin_ms=0, end_ms=1 << 62
                )
                assert [m.body for m in found] == [body]
                commit_log = sorted((disk.path / "store" / "commitlog").iterdir())
                assert int(commit_log[0].name) > 0, "no commit-log segment was cleaned"
            finally:
                await producer.shutdown()
                await instance.shutdown()
