"""Controller mode's HA handshake between real stores: the slave names its broker id, the master answers
with its epochs, and an old master whose log runs past its last shared epoch cuts that tail before it
copies the new master's log (no offset ever holds two different messages)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from orbitmq.replication.epoch_file import EpochFile, agree_with_master
from orbitmq.replication.master import HAService
from orbitmq.replication.slave import HAClient
from orbitmq.store import MessageStore

from .conftest import SEGMENT, commit_log_bytes, eventually, open_store, put_many

FAST = {"heartbeat_interval": 0.2, "housekeeping_interval": 2.0}


async def replicate(
    master: MessageStore, master_epochs: EpochFile, slave: MessageStore, epochs: EpochFile
) -> int:
    """Run one controller-mode replication until the slave has the master's whole log; returns where the
    slave's log was cut (-1: not cut). The master requires the slave (by id) for its acks."""
    cuts: list[int] = []

    def on_epochs(entries: list[tuple[int, int]], master_max: int) -> None:
        cut = agree_with_master(slave, epochs, entries, master_max)
        cuts.append(-1 if cut is None else cut)

    ha = HAService(
        master, file_size=SEGMENT, identify_slaves=True, epochs=lambda: master_epochs.entries, **FAST
    )
    ha.set_required(frozenset({2}))
    await ha.start()
    client = HAClient(slave, master_address=ha.address, broker_id=2, on_master_epochs=on_epochs, **FAST)
    await client.start()
    try:
        end = master.get_max_phy_offset()
        await eventually(lambda: slave.get_max_phy_offset() == end, what="the slave to catch up")
        await eventually(lambda: ha.slave_acks.get(2) == end, what="the ack of broker 2")
        assert await ha.wait_for_replication(end, 1.0)
    finally:
        await client.stop()
        await ha.stop()
    return cuts[0]


async def test_old_master_cuts_its_unreplicated_tail_and_follows_the_new_master(tmp_path: Path) -> None:
    old = open_store(tmp_path / "old", port=10911)
    new = open_store(tmp_path / "new", role="SLAVE", port=10921)
    old_epochs, new_epochs = EpochFile(tmp_path / "old.epochs"), EpochFile(tmp_path / "new.epochs")
    try:
        # Epoch 1: the old master writes 30 messages; the slave copies them (nothing to cut).
        old_epochs.append(1, 0)
        put_many(old, 0, 30)
        assert await replicate(old, old_epochs, new, new_epochs) == -1
        assert new_epochs.entries == [(1, 0)]
        shared = old.get_max_phy_offset()
        # The old master writes 5 more that never reach the slave, then dies; the slave is elected for
        # epoch 2 and writes 8 others at the same offsets.
        put_many(old, 100, 5)
        new.config.broker_role = "SYNC_MASTER"
        new_epochs.append(2, new.get_max_phy_offset())
        put_many(new, 200, 8)
        assert old.get_commit_log_data(shared, 64) != new.get_commit_log_data(shared, 64)
        # The old master returns as a slave: it cuts at epoch 2's start and copies the new master's log.
        old.config.broker_role = "SLAVE"
        assert await replicate(new, new_epochs, old, old_epochs) == shared
        assert commit_log_bytes(old) == commit_log_bytes(new)
        assert old_epochs.entries == new_epochs.entries == [(1, 0), (2, shared)]
        # Its consume queues were cut and rebuilt too: the queues end where the new master's do.
        for queue_id in (0, 1):
            assert old.get_max_offset_in_queue("Replicated", queue_id) == new.get_max_offset_in_queue(
                "Replicated", queue_id
            )
    finally:
        old.shutdown()
        new.shutdown()


async def test_a_send_waits_for_every_replica_of_the_sync_state_set(tmp_path: Path) -> None:
    master = open_store(tmp_path / "m", port=10931)
    slaves = {2: open_store(tmp_path / "s2", role="SLAVE", port=10932)}
    slaves[3] = open_store(tmp_path / "s3", role="SLAVE", port=10933)
    epochs = EpochFile(tmp_path / "m.epochs")
    epochs.append(1, 0)
    ha = HAService(master, file_size=SEGMENT, identify_slaves=True, epochs=lambda: epochs.entries, **FAST)
    ha.set_required(frozenset({2, 3}))  # allAckInSyncStateSet with SyncStateSet {1, 2, 3}
    await ha.start()
    clients = {i: HAClient(s, master_address=ha.address, broker_id=i, **FAST) for i, s in slaves.items()}
    try:
        for c in clients.values():
            await c.start()
        end = put_many(master, 0, 5)
        assert await ha.wait_for_replication(end, 5.0)
        assert {i: ha.slave_acks.get(i) for i in slaves} == {2: end, 3: end}
        await clients[3].stop()  # replica 3 stops acknowledging
        end = put_many(master, 5, 5)
        assert not await ha.wait_for_replication(end, 1.0)  # replica 2 alone is not enough
        assert ha.slave_acks[2] == end
        waiting = asyncio.ensure_future(ha.wait_for_replication(end, 5.0))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        ha.set_required(frozenset({2}))  # the controller accepted SyncStateSet {1, 2}: released at once
        assert await asyncio.wait_for(waiting, 1.0)
        ha.set_required(frozenset())  # the master alone: nothing to wait for
        assert await ha.wait_for_replication(put_many(master, 10, 1), 0.1)
    finally:
        for c in clients.values():
            await c.stop()
        await ha.stop()
        for s in (master, *slaves.values()):
            s.shutdown()
