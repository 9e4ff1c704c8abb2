"""The store's side of a full disk, on a small tmpfs: every segment is backed before it is mapped or
refused whole, and the commit log keeps the last part of the disk for consume queues and index."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.message.hosts import pack_host
from orbitmq.store.config import StoreConfig
from orbitmq.store.disk_space import DiskFullError, as_ratio, room_for
from orbitmq.store.index_file import IndexFile
from orbitmq.store.key_index import KeyIndex
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.message_store import MessageStore
from orbitmq.store.results import PutMessageStatus
from orbitmq.store.store_message import StoreMessage

from .conftest import MIB, SmallDisk


def message(queue_id: int, body: bytes) -> StoreMessage:
    host = pack_host("127.0.0.1", 1)
    return StoreMessage("T", queue_id, 0, body, "", 0, 0, host)


def test_a_segment_is_backed_in_full_or_not_made(small_disk: Callable[..., SmallDisk]) -> None:
    disk = small_disk(8)
    f = MappedFile(str(disk.path / f"{0:020d}"), 4 * MIB, create=True)
    try:
        assert os.fstat(f.fd).st_blocks * 512 >= 4 * MIB  # allocated, not sparse
        with pytest.raises(DiskFullError, match="no space left"):
            MappedFile(str(disk.path / f"{4 * MIB:020d}"), 8 * MIB, create=True)
        with pytest.raises(DiskFullError):
            IndexFile(str(disk.path / "index"), 100_000, 400_000, create=True)
        # Nothing half made is left for a later load to take for a segment.
        assert sorted(p.name for p in disk.path.iterdir()) == [f"{0:020d}"]
    finally:
        f.close()


def test_the_commit_log_refuses_a_segment_above_the_warning_ratio(
    small_disk: Callable[..., SmallDisk],
) -> None:
    disk = small_disk(16)
    config = StoreConfig(
        store_path_root_dir=str(disk.path / "store"),
        mapped_file_size_commit_log=4 * MIB,
        mapped_file_size_consume_queue=20 * 1000,
        max_hash_slot_num=100,
        max_index_num=400,
    )
    store = MessageStore(config, clock=FakeClock(1_700_000_000_000))
    store.load()
    store.start()
    try:
        statuses = []
        for _ in range(100):
            statuses.append(store.put_message(message(0, os.urandom(256 * 1024))).status)
            if statuses[-1] is not PutMessageStatus.PUT_OK:
                break
        # 16 MiB at most 90 % used: three 4 MiB segments (and the queue and index files) fit, a fourth not.
        assert statuses[-1] is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.retention.disk_full
        assert disk.used_ratio() <= 0.9
        assert statuses.count(PutMessageStatus.PUT_OK) >= 2 * 4 * MIB // (256 * 1024)
    finally:
        store.shutdown()


def test_ratio_forms_and_room() -> None:
    assert as_ratio(0.9) == 0.9
    assert as_ratio(90) == 0.9
    assert room_for("/", 0, 1.0)
    assert not room_for("/", 1 << 62, 0.9)


def test_an_index_file_the_disk_has_no_room_for_leaves_keys_unindexed_and_is_not_retried_per_message(
    small_disk: Callable[..., SmallDisk], caplog: pytest.LogCaptureFixture
) -> None:
    disk = small_disk(4)
    index = KeyIndex(str(disk.path / "index"), 100_000, 400_000, FakeClock())  # an 8.4 MB file
    for n in range(100):
        index.put("T", [f"k{n}"], n * 100, 1_700_000_000_000)
    assert index.files == []
    assert list((disk.path / "index").iterdir()) == []
    assert [r.levelname for r in caplog.records if "not indexed" in r.getMessage()] == ["ERROR"]


def test_a_put_whose_consume_queue_has_no_room_is_refused_before_the_append(
    small_disk: Callable[..., SmallDisk],
) -> None:
    """Queue 0's 6 MB file takes the disk past the clean-forcibly ratio; queue 1's would not fit: its
    message is refused instead of going into the log without a queue entry (never pulled)."""
    disk = small_disk(16)
    config = StoreConfig(
        store_path_root_dir=str(disk.path / "store"),
        mapped_file_size_commit_log=4 * MIB,
        max_hash_slot_num=100,
        max_index_num=400,
    )
    store = MessageStore(config, clock=FakeClock())
    store.load()
    store.start()
    try:
        statuses = []
        for queue_id in range(4):
            statuses.append(store.put_message(message(queue_id, b"x" * 100)).status)
        end = store.get_max_phy_offset()
    finally:
        store.shutdown()
    assert statuses == [PutMessageStatus.PUT_OK] + 3 * [PutMessageStatus.SERVICE_NOT_AVAILABLE]
    assert end < 200  # one record in the log: nothing stored without its queue entry
