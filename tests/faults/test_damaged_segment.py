"""A damaged store under a real broker: a byte flipped inside a commit-log segment that is not the tail
(in a body, a TOTALSIZE or a magic code), or inside a consume-queue file, while the broker was stopped
(cleanly or by kill -9). After the restart the log names the file and offset, every other acknowledged
message is still consumable at its queue offset, and the damaged one is never served with a wrong body.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orbitmq.client.aio import ClientConfig, ClientInstance, Message, Producer, SendStatus
from orbitmq.message.model import MessageExt, MessageQueue
from orbitmq.testing import ServerProcess, start_broker, start_namesrv
from orbitmq.testing.drain import drain_queue

pytestmark = pytest.mark.slow
Served = dict[tuple[int, int], MessageExt]

TOPIC = "Damaged"
QUEUES = 4
SEGMENT = 64 * 1024
CQ_FILE = 100 * 20
MINUTE = 60_000


@dataclass(frozen=True)
class Sent:
    key: str
    body: bytes
    msg_id: str
    queue_id: int
    queue_offset: int
    offset: int  # in the commit log


def broker_conf(root: Path, **extra: Any) -> dict[str, Any]:
    return {
        "storePathRootDir": root,
        "mappedFileSizeCommitLog": SEGMENT,
        "mappedFileSizeConsumeQueue": CQ_FILE,
        # No checkpoint during the run: after kill -9, recovery checks the whole log.
        "flushIntervalConsumeQueue": MINUTE,
        "flushConsumeQueueThoroughInterval": MINUTE,
        **extra,
    }


async def send_all(namesrv: str, broker: str, count: int) -> list[Sent]:
    instance = ClientInstance(_client(namesrv))
    try:
        await instance.api.create_topic(broker, TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        for _ in range(200):
            if await instance.api.get_topic_route(TOPIC) is not None:
                break
            await asyncio.sleep(0.1)
    finally:
        await instance.shutdown()
    producer = Producer("damaged-p", config=_client(namesrv), retry_times=0)
    await producer.start()
    sent = []
    try:
        for n in range(count):
            key, body = f"k{n}", f"body of message {n:05d} ".encode() * 12
            r = await producer.send(Message.create(TOPIC, body, keys=key))
            assert r.status is SendStatus.SEND_OK
            offset = int(r.offset_msg_id[-16:], 16)
            sent.append(Sent(key, body, r.msg_id, r.message_queue.queue_id, r.queue_offset, offset))
    finally:
        await producer.shutdown()
    return sent


def _client(namesrv: str) -> ClientConfig:
    return ClientConfig(namesrv_addrs=[namesrv], poll_namesrv_interval=0.5, heartbeat_interval=1.0)


def segment_of(root: Path, offset: int) -> tuple[Path, int]:
    return root / "commitlog" / f"{offset - offset % SEGMENT:020d}", offset % SEGMENT


def flip(path: Path, pos: int) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= 0xFF
    path.write_bytes(data)


async def read_back(namesrv: str, broker: ServerProcess) -> Served:
    instance = ClientInstance(_client(namesrv))
    try:
        at: Served = {}
        for q in range(QUEUES):
            mq = MessageQueue(TOPIC, "broker-a", q)
            for m in await drain_queue(instance.api, broker.broker_addr, mq, group="damaged-reader"):
                assert (q, m.queue_offset) not in at
                at[(q, m.queue_offset)] = m
        return at
    finally:
        await instance.shutdown()


async def by_key(namesrv: str, broker: ServerProcess, key: str) -> list[MessageExt]:
    instance = ClientInstance(_client(namesrv))
    try:
        return await instance.api.query_message(
            broker.broker_addr, TOPIC, key, max_num=8, begin_ms=0, end_ms=1 << 62
        )
    finally:
        await instance.shutdown()


def broker_log(broker: ServerProcess) -> str:
    return broker.stdout_path.read_text(errors="replace") + broker.stderr_path.read_text(errors="replace")


def assert_served_except(at: Served, sent: list[Sent], victim: Sent | None) -> None:
    for s in sent:
        m = at.get((s.queue_id, s.queue_offset))
        if s is victim:
            assert m is None, f"the damaged record was served: {m}"
            continue
        assert m is not None, f"{s.key} (queue {s.queue_id} offset {s.queue_offset}) was lost"
        assert (m.body, m.unique_id, m.keys) == (s.body, s.msg_id, s.key)
    assert len(at) == len(sent) - (victim is not None)


# (where in the victim record the byte is flipped, how the broker stops)
DAMAGE = {"body": 200, "size": 2, "magic": 5}


@pytest.mark.parametrize(
    ("field", "stop"), [("body", "stop"), ("size", "kill"), ("magic", "stop"), ("body", "kill")]
)
async def test_damaged_commit_log_record_is_reported_and_skipped(
    tmp_path: Path, field: str, stop: str
) -> None:
    root = tmp_path / "store"
    with start_namesrv(tmp_path) as ns:
        broker = start_broker(tmp_path, ns.address, **broker_conf(root))
        try:
            sent = await send_all(ns.address, broker.broker_addr, 700)
            last_segment = sent[-1].offset // SEGMENT
            assert last_segment >= 4
        finally:
            broker.stop() if stop == "stop" else broker.kill()
        # The record nearest the middle of the segment before the tail: inside what recovery checks
        # after a clean stop (the last three segments, the next one created ahead among them).
        middle = (last_segment - 1) * SEGMENT + SEGMENT // 2
        victim = min(sent, key=lambda s: abs(s.offset - middle))
        path, pos = segment_of(root, victim.offset)
        flip(path, pos + DAMAGE[field])
        with start_broker(tmp_path, ns.address, **broker_conf(root)) as again:
            assert_served_except(await read_back(ns.address, again), sent, victim)
            text = broker_log(again)
            assert re.search(rf"commit log {re.escape(str(path))} damaged at offset {victim.offset}\b", text)
            assert await by_key(ns.address, again, victim.key) == []
            later = sent[-1]
            assert [m.unique_id for m in await by_key(ns.address, again, later.key)] == [later.msg_id]
            more = await send_all(ns.address, again.broker_addr, 8)
            assert all(s.queue_offset > 0 for s in more)
            assert_served_except(await read_back(ns.address, again), sent + more, victim)


async def test_damage_recovery_does_not_check_is_refused_on_read(tmp_path: Path) -> None:
    """A body flipped in the first segment, older than the three a clean start checks: with
    checkCRCOnRead a pull refuses it (logged with file and offset) and serves every other message."""
    root = tmp_path / "store"
    conf = broker_conf(root, checkCRCOnRead="true")
    with start_namesrv(tmp_path) as ns:
        with start_broker(tmp_path, ns.address, **conf) as broker:
            sent = await send_all(ns.address, broker.broker_addr, 700)
        victim = min(sent, key=lambda s: abs(s.offset - SEGMENT // 2))
        path, pos = segment_of(root, victim.offset)
        flip(path, pos + DAMAGE["body"])
        with start_broker(tmp_path, ns.address, **conf) as again:
            assert_served_except(await read_back(ns.address, again), sent, victim)
            assert await by_key(ns.address, again, victim.key) == []
            assert re.search(
                rf"commit log {re.escape(str(path))}: record at offset {victim.offset} not served .*"
                "body CRC mismatch",
                broker_log(again),
            )


@pytest.mark.parametrize("stop", ["stop", "kill"])
async def test_damaged_consume_queue_is_rebuilt_from_the_log(tmp_path: Path, stop: str) -> None:
    root = tmp_path / "store"
    with start_namesrv(tmp_path) as ns:
        broker = start_broker(tmp_path, ns.address, **broker_conf(root))
        try:
            sent = await send_all(ns.address, broker.broker_addr, 700)
        finally:
            broker.stop() if stop == "stop" else broker.kill()
        cq = root / "consumequeue" / TOPIC / "0" / f"{0:020d}"
        # Entry 50 of queue 0: a byte inside its commit-log offset, so it points 16 MiB away.
        flip(cq, 50 * 20 + 5)
        with start_broker(tmp_path, ns.address, **broker_conf(root)) as again:
            assert_served_except(await read_back(ns.address, again), sent, None)
            line = rf"consume queue \S+/{TOPIC}/0 damaged at byte 1000 \(entry 50\)"
            assert re.search(line, broker_log(again))
