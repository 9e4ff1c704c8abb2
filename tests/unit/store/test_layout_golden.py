"""Golden layout tests: the store directory is RocketMQ 4.9's, byte for byte (fact sheet 6.1-6.6).

No Java RocketMQ runs here, so the expected bytes are built from the fact sheet with plain `struct`, and
a directory laid out by hand the way RocketMQ writes it must load.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.common.errors import StoreError
from orbitmq.message.codec import encode_record, pack_host
from orbitmq.message.hashing import java_string_hash
from orbitmq.store import GetMessageStatus, MessageStore

from .conftest import BORN_HOST, make_message, small_config

BLANK_MAGIC = 0xCBD43194


def test_java_hash_known_values() -> None:
    # Values printed by Java's String.hashCode: the CQ tags code and index key hash depend on them.
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("TagA") == 2598919
    assert java_string_hash("") == 0


def test_commit_log_segments_named_by_offset_full_size_and_blank_record(tmp_path: Path) -> None:
    clock = FakeClock()
    store = MessageStore(small_config(tmp_path), clock=clock)
    store.load()
    store.start()
    results = [store.put_message(make_message(body=b"b" * 1000, tags="TagA")) for _ in range(70)]
    assert all(r.ok for r in results)
    store.shutdown()
    seg = 64 * 1024
    names = sorted(os.listdir(tmp_path / "commitlog"))
    assert names[:2] == ["00000000000000000000", "00000000000000065536"]
    assert all(len(n) == 20 and int(n) % seg == 0 for n in names)
    assert all(os.path.getsize(tmp_path / "commitlog" / n) == seg for n in names)
    # The first message of the second segment starts at its first byte; the first segment ends in a
    # blank record: TOTALSIZE = bytes left, MAGIC = 0xCBD43194, then zeros.
    second = next(r for r in results if r.wrote_offset >= seg)
    assert second.wrote_offset == seg
    last_in_first = max(r.end_offset for r in results if r.wrote_offset < seg)
    data = (tmp_path / "commitlog" / names[0]).read_bytes()
    remaining = seg - last_in_first
    assert remaining >= 8
    assert struct.unpack_from(">iI", data, last_in_first) == (remaining, BLANK_MAGIC)
    assert data[last_in_first + 8 :] == bytes(remaining - 8)


def test_consume_queue_entry_bytes_and_file(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path), clock=FakeClock())
    store.load()
    store.start()
    r1 = store.put_message(make_message("T1", 3, b"abc", tags="TagA"))
    r2 = store.put_message(make_message("T1", 3, b"defg"))
    store.shutdown()
    path = tmp_path / "consumequeue" / "T1" / "3" / "00000000000000000000"
    data = path.read_bytes()
    assert len(data) == 300 * 20
    assert data[:40] == struct.pack(
        ">qiqqiq", r1.wrote_offset, r1.wrote_bytes, 2598919, r2.wrote_offset, r2.wrote_bytes, 0
    )
    assert data[40:] == bytes(len(data) - 40)


def test_consume_queue_file_size_rounded_to_entries(tmp_path: Path) -> None:
    config = small_config(tmp_path, mapped_file_size_consume_queue=1001)
    assert config.consume_queue_file_size == 1020


def test_index_file_header_slot_and_entry_bytes(tmp_path: Path) -> None:
    clock = FakeClock(now_ms=1_700_000_000_000)
    store = MessageStore(small_config(tmp_path, max_hash_slot_num=64, max_index_num=200), clock=clock)
    store.load()
    store.start()
    r1 = store.put_message(make_message("T1", 0, b"x", keys="k1"))
    clock.advance(5)
    r2 = store.put_message(make_message("T1", 0, b"y", keys="k2", uniq="U1"))
    store.shutdown()
    names = os.listdir(tmp_path / "index")
    assert len(names) == 1 and len(names[0]) == 17 and names[0].isdigit()
    data = (tmp_path / "index" / names[0]).read_bytes()
    assert len(data) == 40 + 64 * 4 + 200 * 20
    t0 = 1_700_000_000_000
    # begin ts, end ts, begin phy, end phy, slots used, index count (3 entries + unused entry 0)
    h1 = abs(java_string_hash("T1#k1"))
    h_u = abs(java_string_hash("T1#U1"))
    h2 = abs(java_string_hash("T1#k2"))
    used_slots = len({h1 % 64, h_u % 64, h2 % 64})
    assert struct.unpack_from(">qqqqii", data, 0) == (
        t0,
        t0 + 5000,
        r1.wrote_offset,
        r2.wrote_offset,
        used_slots,
        4,
    )
    entries = 40 + 64 * 4
    assert struct.unpack_from(">iqii", data, entries + 20) == (h1, r1.wrote_offset, 0, 0)
    # UNIQ_KEY is indexed before the KEYS tokens; timeDiff is in seconds from the file's begin.
    assert struct.unpack_from(">iqii", data, entries + 40)[:3] == (h_u, r2.wrote_offset, 5)
    assert struct.unpack_from(">iqii", data, entries + 60)[:3] == (h2, r2.wrote_offset, 5)
    assert struct.unpack_from(">i", data, 40 + (h1 % 64) * 4)[0] in (1, 2, 3)
    assert struct.unpack_from(">i", data, 40 + (h2 % 64) * 4)[0] == 3


def test_checkpoint_abort_and_lock_files(tmp_path: Path) -> None:
    clock = FakeClock(now_ms=1_700_000_123_456)
    store = MessageStore(small_config(tmp_path), clock=clock)
    store.load()
    store.start()
    assert (tmp_path / "abort").exists()
    assert (tmp_path / "lock").read_bytes()[:4] == b"lock"
    with pytest.raises(StoreError, match="is in use by another store in this process"):
        MessageStore(small_config(tmp_path)).load()
    store.put_message(make_message(keys="k"))
    store.shutdown()
    assert not (tmp_path / "abort").exists()
    data = (tmp_path / "checkpoint").read_bytes()
    assert len(data) == 4096
    physic, logics, index = struct.unpack_from(">qqq", data, 0)
    assert physic == 1_700_000_123_456
    assert logics == 1_700_000_123_456
    assert index == 0  # no index file was filled
    assert data[24:] == bytes(4096 - 24)


def test_loads_a_directory_laid_out_as_rocketmq_writes_it(tmp_path: Path) -> None:
    """A store directory built by hand from the fact sheet (as RocketMQ 4.9 leaves it after a clean
    shutdown: segments at full size, CQ entries, checkpoint, no abort file) is loaded and served."""
    seg = 64 * 1024
    store_host = pack_host("192.168.0.9", 10911)
    (tmp_path / "commitlog").mkdir()
    log = bytearray(seg)
    cq = bytearray(300 * 20)
    pos = 0
    offsets = []
    for i in range(5):
        props = f"TAGS\x01TagA\x02KEYS\x01key{i}".encode()
        rec = encode_record(
            queue_id=1,
            flag=0,
            queue_offset=i,
            physical_offset=pos,
            sys_flag=0,
            born_timestamp=1,
            born_host=BORN_HOST,
            store_timestamp=1_600_000_000_000 + i,
            store_host=store_host,
            reconsume_times=0,
            prepared_transaction_offset=0,
            body=f"m{i}".encode(),
            topic=b"Legacy",
            properties=props,
        )
        log[pos : pos + len(rec)] = rec
        struct.pack_into(">qiq", cq, i * 20, pos, len(rec), java_string_hash("TagA"))
        offsets.append(pos)
        pos += len(rec)
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(log)
    cq_dir = tmp_path / "consumequeue" / "Legacy" / "1"
    cq_dir.mkdir(parents=True)
    (cq_dir / "00000000000000000000").write_bytes(cq)
    (tmp_path / "checkpoint").write_bytes(
        struct.pack(">qqq", 1_600_000_000_004, 1_600_000_000_004, 0) + bytes(4072)
    )
    store = MessageStore(small_config(tmp_path), clock=FakeClock())
    assert store.load() is True
    store.start()
    try:
        assert store.get_max_phy_offset() == pos
        assert store.get_max_offset_in_queue("Legacy", 1) == 5
        got = store.get_messages("g", "Legacy", 1, 0, 32, None)
        assert got.status is GetMessageStatus.FOUND and got.message_count == 5
        # The index was not there: it is rebuilt from the log on start (the dispatcher catches up).
        r = store.put_message(make_message("Legacy", 1, b"new"))
        assert r.wrote_offset == pos and r.queue_offset == 5
    finally:
        store.shutdown()


def test_refuses_a_segment_of_the_wrong_size(tmp_path: Path) -> None:
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(bytes(1000))
    store = MessageStore(small_config(tmp_path))
    with pytest.raises(StoreError, match="expected 65536"):
        store.load()
    # The lock was released: a corrected directory can be loaded by another instance.
    (tmp_path / "commitlog" / "00000000000000000000").unlink()
    other = MessageStore(small_config(tmp_path))
    other.load()
    other.shutdown()
