"""A real broker whose store lives on the power-loss disk: SYNC_FLUSH keeps every acknowledged message
through power cuts; ASYNC_FLUSH (a long flush interval) loses acknowledged ones, which shows these tests
can fail. kill -9 alone cannot show either: the page cache survives a killed process.

Each round: a stream of concurrent sends, SIGKILL the broker mid-stream, cut the disk's power (every
unsynced write is gone, mmap'd commit-log pages included), restart the broker on what is left. The consume
queues, index and checkpoint are flushed only every minute here, so after a cut they are rebuilt from the
commit log by recovery: pulls (consume queue) and key lookups (index) must find every acknowledged message
at the queue offset its send result named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orbitmq.client.aio import ClientInstance
from orbitmq.testing import ServerProcess, start_broker, start_namesrv
from orbitmq.testing.powerloss import PowerLossDisk

from .stream import Ack, SendStream, check_queues, client_config, create_topic, missing_acks, read_queues

pytestmark = pytest.mark.slow

TOPIC = "PowerCut"
MINUTE = 60_000


def store_conf(disk: PowerLossDisk, flush_disk_type: str) -> dict[str, Any]:
    return {
        "storePathRootDir": disk.mountpoint / "store",
        "flushDiskType": flush_disk_type,
        # Small files, so the stream crosses commit-log, consume-queue and index file boundaries.
        "mappedFileSizeCommitLog": 64 * 1024,
        "mappedFileSizeConsumeQueue": 100 * 20,
        "maxHashSlotNum": 64,
        "maxIndexNum": 200,
        # Nothing but the commit log's own flush makes anything durable during a round.
        "flushIntervalCommitLog": MINUTE if flush_disk_type == "ASYNC_FLUSH" else 500,
        "flushCommitLogThoroughInterval": MINUTE,
        "flushIntervalConsumeQueue": MINUTE,
        "flushConsumeQueueThoroughInterval": MINUTE,
    }


async def round_with_cut(
    tmp_path: Path, ns: ServerProcess, disk: PowerLossDisk, conf: dict[str, Any], *, run: str, acks: int
) -> list[Ack]:
    """Start the broker on the disk, stream sends, kill it after `acks` acks, cut the power."""
    broker = start_broker(tmp_path, ns.address, **conf)
    try:
        if run == "r0":
            await create_topic(ns.address, broker.broker_addr, TOPIC)
        stream = SendStream(ns.address, TOPIC, run)
        await stream.start()
        await stream.wait(acks)
        broker.kill()  # mid-stream: sends are in flight
        acked = await stream.stop()
    finally:
        broker.kill()
    disk.power_cut()
    return acked


async def recovered_state(
    tmp_path: Path, ns: ServerProcess, conf: dict[str, Any], acked: list[Ack]
) -> tuple[list[Ack], int]:
    """Restart on the cut disk; the acknowledged messages that are not where their ack said, and how many
    messages the broker holds."""
    with start_broker(tmp_path, ns.address, **conf) as broker:
        instance = ClientInstance(client_config(ns.address))
        try:
            at = check_queues(await read_queues(instance, broker.broker_addr, "broker-a", TOPIC))
            lost = missing_acks(acked, at)
            kept = [a for a in acked if a not in lost]
            # The index: every kept message is found by its key, once.
            for ack in kept:
                found = await instance.api.query_message(
                    broker.broker_addr, TOPIC, ack.key, max_num=8, begin_ms=0, end_ms=1 << 62
                )
                assert [m.unique_id for m in found] == [ack.msg_id], (ack, found)
            return lost, len(at)
        finally:
            await instance.shutdown()


async def test_sync_flush_keeps_every_acknowledged_message_through_power_cuts(
    tmp_path: Path, disk: PowerLossDisk
) -> None:
    conf = store_conf(disk, "SYNC_FLUSH")
    with start_namesrv(tmp_path) as ns:
        acked: list[Ack] = []
        # Two cuts: the second recovery starts from the checkpoint and files the first one left.
        for run, wanted in (("r0", 400), ("r1", 300)):
            acked += await round_with_cut(tmp_path, ns, disk, conf, run=run, acks=wanted)
        lost, held = await recovered_state(tmp_path, ns, conf, acked)
    assert len(acked) >= 700
    assert lost == []
    # Unacknowledged sends may have been stored too (killed before answering), never more than sent.
    assert held >= len(acked)


async def test_async_flush_loses_acknowledged_messages_on_power_cut(
    tmp_path: Path, disk: PowerLossDisk
) -> None:
    """The control: with a one-minute flush interval the same test must see acknowledged messages go."""
    conf = store_conf(disk, "ASYNC_FLUSH")
    with start_namesrv(tmp_path) as ns:
        acked = await round_with_cut(tmp_path, ns, disk, conf, run="r0", acks=300)
        lost, _ = await recovered_state(tmp_path, ns, conf, acked)
    assert len(lost) > 0, "a power cut lost nothing under ASYNC_FLUSH: the disk is not dropping writes"
