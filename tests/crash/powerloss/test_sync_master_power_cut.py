"""SYNC_MASTER through a power cut of the master: an acknowledged message was on the slave when it was
acknowledged, so losing the master's unsynced disk writes loses none of them.

The master flushes its disk only every minute (ASYNC_FLUSH), so after the cut its own disk has lost
acknowledged messages (checked: the control that the cut did drop them). Mid-stream the slave is frozen
(SIGSTOP) for a second while the senders go on, then the master is killed and its power cut, then the
slave is killed too (what sat unread in its socket is gone) and restarted: it must hold every message the
master acknowledged. A master that answered before the slave confirmed fails here every time: a send
that started after the freeze began can only be acknowledged by such a master.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from orbitmq.client.aio import ClientInstance
from orbitmq.testing.powerloss import PowerLossDisk

from .stream import (
    SendStream,
    check_queues,
    client_config,
    create_topic,
    missing_acks,
    read_queues,
    sync_master_on_disk,
    wait_topic_on,
)

pytestmark = pytest.mark.slow

TOPIC = "PowerCutSync"
MINUTE = 60_000


async def test_sync_master_power_cut_loses_nothing_acknowledged(tmp_path: Path, disk: PowerLossDisk) -> None:
    c = sync_master_on_disk(
        tmp_path,
        disk,
        flushDiskType="ASYNC_FLUSH",
        flushIntervalCommitLog=MINUTE,
        flushCommitLogThoroughInterval=MINUTE,
        flushIntervalConsumeQueue=MINUTE,
    )
    master, slave = c.master("broker-a"), c.slave("broker-a")
    with c:
        await c.wait_registered()
        ns = c.namesrv_addrs[0]
        await create_topic(ns, master.address, TOPIC)
        instance = ClientInstance(client_config(ns))
        try:
            await wait_topic_on(instance, slave.address, TOPIC)
            stream = SendStream(ns, TOPIC, "sm")
            await stream.start()
            await stream.wait(300)  # SEND_OK only once the slave has the message
            slave.pause()
            paused_at = asyncio.get_running_loop().time()
            await asyncio.sleep(1.0)  # the senders go on against a slave that confirms nothing
            master.kill()
            acked = await stream.stop()
            # What was sent after the slave stopped, the slave never had: no SEND_OK for it, ever. (The
            # check below alone depends on timing: a master that does not wait loses acknowledged
            # messages only if the slave had not yet read them when it was killed.)
            unconfirmable = [a.key for a in acked if a.sent_at > paused_at]
            assert unconfirmable == [], f"{len(unconfirmable)} sends acknowledged without the slave"
            disk.power_cut()
            slave.kill()
            slave.start()

            # The control: the master's own disk lost acknowledged messages.
            commit_log = disk.mountpoint / "store" / "commitlog"
            on_master_disk = b"".join(
                (commit_log / name).read_bytes() for name in sorted(os.listdir(commit_log))
            )
            assert any(a.body not in on_master_disk for a in acked), "the cut dropped nothing on the master"

            reader = ClientInstance(client_config(ns))  # the old connection to the slave is dead
            try:
                at = check_queues(await read_queues(reader, slave.address, "broker-a", TOPIC))
            finally:
                await reader.shutdown()
            assert missing_acks(acked, at) == []
        finally:
            await instance.shutdown()
