"""The timer log, wheel and checkpoint: slot chains, re-linking after a kill between the two writes,
rebuilding for another geometry, and no Python object per pending timer."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from orbitmq.store.timer_log import MAGIC_DELETE, MAGIC_NORMAL, RECORD_SIZE, TimerLog
from orbitmq.store.timer_store import TimerStore


def _open(root: Path, *, slots: int = 100, precision: int = 1000) -> TimerStore:
    return TimerStore(str(root), str(root / "config" / "timercheck"), slots=slots, precision_ms=precision)


def test_slot_chain_lists_records_newest_first(tmp_path: Path) -> None:
    store = _open(tmp_path)
    for i in range(5):
        store.add(3000, 100 * i, 10, MAGIC_NORMAL, i)
    store.add(4000, 999, 10, MAGIC_DELETE, 5)
    assert [r.phy_offset for r in store.entries(3000)] == [400, 300, 200, 100, 0]
    assert [(r.phy_offset, r.magic) for r in store.entries(4000)] == [(999, MAGIC_DELETE)]
    assert list(store.entries(5000)) == []
    # the same index one window later is another time: the slot does not answer for it
    assert list(store.entries(3000 + 100 * 1000)) == []
    store.close()


def test_reopen_keeps_slots_and_checkpoint(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.add(7000, 1, 2, MAGIC_NORMAL, 0)
    store.checkpoint.enqueue_offset = 1
    store.checkpoint.dequeue_ms = 5000
    store.close()
    again = _open(tmp_path)
    assert again.checkpoint.enqueue_offset == 1 and again.checkpoint.dequeue_ms == 5000
    assert [r.phy_offset for r in again.entries(7000)] == [1]
    again.close()


def test_records_after_the_checkpoint_count_as_read_from_the_queue(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.add(7000, 1, 2, MAGIC_NORMAL, 0)
    store.save()
    store.add(7000, 2, 2, MAGIC_NORMAL, 1)
    # a record written after the last checkpoint that links to no slot end (its prev is not the last)
    store.log.append(store.log.read(store.log.length - RECORD_SIZE)._replace(phy_offset=3, queue_offset=2))
    store.log.close()
    store.wheel.close()  # (no checkpoint written: the process died)
    again = _open(tmp_path)
    assert [r.phy_offset for r in again.entries(7000)] == [2, 1]  # the third's prev is 2's prev: no link
    assert again.checkpoint.enqueue_offset == 3  # yet its queue offset counts as read
    again.close()


def test_lost_slot_write_is_relinked(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.add(7000, 1, 2, MAGIC_NORMAL, 0)
    store.save()
    slot = store.wheel.get(7000)
    store.add(7000, 2, 2, MAGIC_NORMAL, 1)
    store.wheel.put(7000, slot.first, slot.last, slot.num)  # the wheel write did not happen
    store.log.close()
    store.wheel.close()
    again = _open(tmp_path)
    assert again.recovered == 1
    assert [r.phy_offset for r in again.entries(7000)] == [2, 1]
    again.close()


def test_other_geometry_rebuilds_the_wheel_from_the_log(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.checkpoint.dequeue_ms = 5000
    store.add(4000, 1, 2, MAGIC_NORMAL, 0)  # before the scan point: delivered, dropped by the rebuild
    store.add(9000, 2, 2, MAGIC_NORMAL, 1)
    store.close()
    again = _open(tmp_path, slots=300)
    assert [r.phy_offset for r in again.entries(9000)] == [2]
    assert again.log.length == RECORD_SIZE
    again.close()


def test_torn_tail_is_cut(tmp_path: Path) -> None:
    log = TimerLog(str(tmp_path / "timerlog" / "timerlog"))
    log.close()
    with open(tmp_path / "timerlog" / "timerlog", "ab") as f:
        f.write(b"\x00" * (RECORD_SIZE + 7))
    assert TimerLog(str(tmp_path / "timerlog" / "timerlog")).length == RECORD_SIZE
    with pytest.raises(ValueError, match="outside the log"):
        TimerLog(str(tmp_path / "timerlog" / "timerlog")).read(RECORD_SIZE)


def test_pending_timers_hold_no_python_objects(tmp_path: Path) -> None:
    """200k pending timers spread over the wheel: the objects alive do not grow with them."""
    store = _open(tmp_path, slots=2 * 3 * 86400)
    gc.collect()
    before = len(gc.get_objects())
    for i in range(200_000):
        store.add(1_000_000 + (i % 50_000) * 1000, i * 300, 300, MAGIC_NORMAL, i)
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert grown < 100, grown
    assert os.path.getsize(store.log.path) == 200_000 * RECORD_SIZE
    assert sum(1 for _ in store.entries(1_000_000)) == 4
    store.close()


def test_compaction_drops_delivered_records_and_keeps_pending(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.checkpoint.dequeue_ms = 1000
    for i in range(100):
        store.add(1000, i, 1, MAGIC_NORMAL, i)
    store.add(9000, 500, 1, MAGIC_NORMAL, 100)
    store.add(9000, 501, 1, MAGIC_NORMAL, 101)
    assert not store.compact(0)  # nothing delivered yet: all of it is live
    store.scanned(1000)
    store.checkpoint.dequeue_ms = 2000
    assert store.checkpoint.pending == 2
    assert not store.compact(200 * RECORD_SIZE)  # under the size that makes it worth it
    assert store.compact(0)
    assert store.log.length == 2 * RECORD_SIZE
    assert [r.phy_offset for r in store.entries(9000)] == [501, 500]
    store.close()
    again = _open(tmp_path)
    assert [r.phy_offset for r in again.entries(9000)] == [501, 500]
    assert again.checkpoint.enqueue_offset == 102
    again.close()


def test_a_rewrite_cut_by_a_kill_is_redone_from_the_old_log(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.add(9000, 7, 1, MAGIC_NORMAL, 0)
    store.add(9000, 8, 1, MAGIC_NORMAL, 1)
    store.save()
    path = store.log.path
    store.log.close()
    store.wheel.close()
    os.replace(path, path + ".old")  # killed after the rename, the new log half written
    with open(path, "wb") as f:
        f.write(b"\xff" * RECORD_SIZE)
    again = _open(tmp_path)
    assert not os.path.exists(path + ".old")
    assert [r.phy_offset for r in again.entries(9000)] == [8, 7]
    again.close()
