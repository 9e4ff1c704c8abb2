"""Controller mode's HA handshake between real stores: the slave names its broker id, the master answers
with its epochs, and an old master whose log runs past its last shared epoch cuts that tail before it
copies the new master's log (no offset ever holds two different messages)."""

from __future__ import annotations

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
