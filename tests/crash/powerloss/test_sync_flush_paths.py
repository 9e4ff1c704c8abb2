"""The two SYNC_FLUSH answers that wait through the store's `request_flush` (send_waits.py), not the
group-commit `Later`: a broker that is SYNC_MASTER and SYNC_FLUSH, and CONSUMER_SEND_MSG_BACK.

Each answer is checked the moment it arrives: the power-loss disk's platter (what fdatasync wrote) must
already hold the message. An answer sent before its fdatasync fails this check every few sends (the
flusher thread comes round every 10 ms), so tens of sends catch it every time. Then the broker is killed
and its power cut, and after the restart every answered message must be there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.client.aio import ClientInstance, Message, Producer, SendStatus
from orbitmq.message.ids import decode_offset_msg_id
from orbitmq.message.model import MessageQueue
from orbitmq.testing import start_broker, start_namesrv
from orbitmq.testing.drain import drain_queue
from orbitmq.testing.powerloss import PowerLossDisk

from .stream import (
    check_queues,
    client_config,
    create_topic,
    read_queues,
    sync_master_on_disk,
    wait_topic_on,
)

pytestmark = pytest.mark.slow

SEGMENT = 256 * 1024
SENDS = 60


def platter_commit_log(disk: PowerLossDisk) -> bytes:
    """The commit log as fdatasync left it (the daemon writes a file's pages through on fsync only)."""
    directory = disk.backing / "store" / "commitlog"
    return b"".join(p.read_bytes() for p in sorted(directory.iterdir()))


async def test_sync_master_with_sync_flush_answers_only_what_is_on_the_platter(
    tmp_path: Path, disk: PowerLossDisk
) -> None:
    c = sync_master_on_disk(tmp_path, disk, flushDiskType="SYNC_FLUSH")
    master, slave = c.master("broker-a"), c.slave("broker-a")
    topic = "SyncMasterSyncFlush"
    with c:
        await c.wait_registered()
        ns = c.namesrv_addrs[0]
        await create_topic(ns, master.address, topic)
        instance = ClientInstance(client_config(ns))
        producer = Producer("sm-sf", config=client_config(ns), retry_times=0)
        acked = []
        try:
            await wait_topic_on(instance, slave.address, topic)  # else the slave cannot confirm
            await producer.start()
            for n in range(SENDS):
                body = f"sync-master-sync-flush {n} ".encode() * 4
                result = await producer.send(Message.create(topic, body, keys=f"k{n}"))
                assert result.status is SendStatus.SEND_OK, result
                _, _, offset = decode_offset_msg_id(result.offset_msg_id)
                on_platter = platter_commit_log(disk)
                assert body in on_platter[offset : offset + 4 * len(body)], f"send {n} answered unflushed"
                acked.append((result, body))
        finally:
            await producer.shutdown()
            await instance.shutdown()
        master.kill()
        disk.power_cut()
        master.start()
        reader = ClientInstance(client_config(ns))
        try:
            at = check_queues(await read_queues(reader, master.address, "broker-a", topic))
        finally:
            await reader.shutdown()
    lost = [
        (r, b)
        for r, b in acked
        if (m := at.get((r.message_queue.queue_id, r.queue_offset))) is None or m.body != b
    ]
    assert len(acked) == SENDS
    assert lost == []


async def test_send_back_on_a_sync_flush_broker_answers_only_what_is_on_the_platter(
    tmp_path: Path, disk: PowerLossDisk
) -> None:
    topic, group = "SendBackSyncFlush", "sb-sync-flush"
    conf = {
        "storePathRootDir": disk.mountpoint / "store",
        "flushDiskType": "SYNC_FLUSH",
        "mappedFileSizeCommitLog": SEGMENT,
    }
    with start_namesrv(tmp_path) as ns:
        broker = start_broker(tmp_path, ns.address, **conf)
        try:
            await create_topic(ns.address, broker.broker_addr, topic)
            instance = ClientInstance(client_config(ns.address))
            producer = Producer("sb-producer", config=client_config(ns.address), retry_times=0)
            try:
                await producer.start()
                queue = MessageQueue(topic, "broker-a", 0)
                for n in range(SENDS // 2):
                    body = f"send-back {n} ".encode() * 4
                    result = await producer.send(Message.create(topic, body), queue=queue)
                    assert result.status is SendStatus.SEND_OK
                originals = await drain_queue(instance.api, broker.broker_addr, queue, group=group)
                assert len(originals) == SENDS // 2
                for msg in originals:
                    await instance.api.consumer_send_message_back(
                        broker.broker_addr, msg, group, delay_level=0, max_reconsume_times=16
                    )
                    # Answered: the retry record (the same body again) is on the platter.
                    copies = platter_commit_log(disk).count(msg.body)
                    assert copies == 2, f"send back of {msg.body[:16]!r} answered before its flush"
            finally:
                await producer.shutdown()
                await instance.shutdown()
        finally:
            broker.kill()
        disk.power_cut()
        with start_broker(tmp_path, ns.address, **conf) as broker:
            reader = ClientInstance(client_config(ns.address))
            try:
                # delayLevel 0 with reconsumeTimes 0: level 3, parked in SCHEDULE_TOPIC_XXXX queue 2.
                parked = await drain_queue(
                    reader.api,
                    broker.broker_addr,
                    MessageQueue("SCHEDULE_TOPIC_XXXX", "broker-a", 2),
                    group=group,
                )
            finally:
                await reader.shutdown()
    assert sorted(m.body for m in parked) == sorted(m.body for m in originals)
    assert all(m.properties.get("REAL_TOPIC") == f"%RETRY%{group}" for m in parked)
