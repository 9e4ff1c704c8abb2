"""Transient store pool (transientStorePoolEnable) and its commit step: activation rules, visibility only
after commit, least pages and thorough interval, byte-identical files, segment rolls through the buffer,
shutdown and crash behaviour."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.common.errors import StoreError
from orbitmq.message.codec import decode_records
from orbitmq.message.record_layout import BLANK_MAGIC
from orbitmq.store import GetMessageStatus, MessageStore, PutMessageResult, StoreConfig
from orbitmq.store.transient_pool import TransientStorePool, activation

from .conftest import make_message, small_config

SEGMENT = 64 * 1024
POOL: dict[str, Any] = {"transient_store_pool_enable": True, "transient_store_pool_size": 2}


def _open(root: Path, clock: FakeClock, **kw: Any) -> MessageStore:
    s = MessageStore(small_config(root, **kw), clock=clock)
    s.load()
    s.start()
    return s


def _bodies(store: MessageStore, queue_id: int = 0, offset: int = 0) -> list[bytes]:
    got = store.get_messages("g", "TopicTest", queue_id, offset, 32, None)
    return [m.body for m in decode_records(b"".join(got.buffers))]


# ---- the pool -------------------------------------------------------------------------------------
def test_pool_allocates_lazily_and_reuses_buffers() -> None:
    pool = TransientStorePool(2, 4096)
    assert (pool.allocated, pool.available) == (0, 2)
    a = pool.borrow()
    b = pool.borrow()
    assert (pool.allocated, pool.available) == (2, 0) and len(a) == 4096
    with pytest.raises(StoreError, match="no free buffer"):
        pool.borrow()
    a[:3] = b"old"
    pool.give_back(a)
    assert pool.available == 1
    again = pool.borrow()
    assert again is a and again[:3] == b"old"  # reused as is: never zeroed (only written bytes commit)
    pool.give_back(again)
    pool.give_back(b)
    pool.close()
    assert a.closed and b.closed
    with pytest.raises(StoreError, match="closed"):
        pool.borrow()
    with pytest.raises(StoreError):
        TransientStorePool(0, 4096)


@pytest.mark.parametrize(
    ("overrides", "active", "reason"),
    [
        ({}, False, ""),
        ({"transient_store_pool_enable": True}, True, ""),
        ({"transient_store_pool_enable": True, "flush_disk_type": "SYNC_FLUSH"}, False, "SYNC_FLUSH"),
        ({"transient_store_pool_enable": True, "broker_role": "SLAVE"}, False, "SLAVE"),
        ({"transient_store_pool_enable": True, "broker_role": "SYNC_MASTER"}, True, ""),
    ],
)
def test_activation_rules(overrides: dict[str, Any], active: bool, reason: str) -> None:
    config = StoreConfig(**overrides)
    got_active, why = activation(config)
    assert got_active is active
    assert reason in why and bool(why) == bool(reason)


def test_ignored_setting_is_logged_and_store_writes_directly(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="orbitmq.store.message_store"):
        s = _open(tmp_path, clock, flush_disk_type="SYNC_FLUSH", **POOL)
    try:
        assert "transientStorePoolEnable=true is ignored: flushDiskType is SYNC_FLUSH" in caplog.text
        assert not s.transient_store_pool_active
        assert s.put_message(make_message(body=b"direct")).ok
        assert _bodies(s) == [b"direct"]  # visible at once: no commit step
        assert s.commit() == 0
    finally:
        s.shutdown()


def test_config_from_broker_properties() -> None:
    config = StoreConfig.from_properties(
        {"transientStorePoolEnable": "true", "transientStorePoolSize": "2", "commitIntervalCommitLog": "50"}
    )
    assert (config.transient_store_pool_enable, config.transient_store_pool_size) == (True, 2)
    assert config.commit_interval_commit_log == 50
    assert (config.commit_commit_log_least_pages, config.commit_commit_log_thorough_interval) == (4, 200)


# ---- visibility -----------------------------------------------------------------------------------
def test_appends_are_invisible_until_commit(tmp_path: Path, clock: FakeClock) -> None:
    s = _open(tmp_path, clock, **POOL)
    arrivals: list[tuple[str, int, int]] = []
    s.add_arrival_listener(lambda topic, q, max_offset, tags: arrivals.append((topic, q, max_offset)))
    try:
        assert s.transient_store_pool_active
        r = s.put_message(make_message(body=b"one", keys="k1", uniq="U1"))
        assert r.ok and (r.wrote_offset, r.queue_offset) == (0, 0)
        # Nothing reads it yet: no CQ entry, no index key, no log bytes, no HA data, no arrival.
        assert (
            s.get_messages("g", "TopicTest", 0, 0, 32, None).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
        )
        assert s.get_max_offset_in_queue("TopicTest", 0) == 0
        assert s.look_message_by_offset(0) is None
        assert s.select_one_message_by_offset(0) is None
        assert s.query_message("TopicTest", "k1", 4, 0, 1 << 62).buffers == []
        assert s.get_commit_log_data(0) is None
        assert s.get_max_phy_offset() == 0 and s.dispatch_behind_bytes == 0
        assert arrivals == []
        assert (tmp_path / "commitlog" / f"{0:020d}").read_bytes()[:8] == bytes(8)

        clock.advance(0.2)  # the thorough interval: commit whatever is pending
        assert s.commit() == r.wrote_bytes
        assert _bodies(s) == [b"one"]
        assert s.look_message_by_offset(0).body == b"one"  # type: ignore[union-attr]
        assert len(s.query_message("TopicTest", "k1", 4, 0, 1 << 62).buffers) == 1
        data = s.get_commit_log_data(0)
        assert data is not None and len(data) == r.end_offset
        assert s.get_max_phy_offset() == r.end_offset
        assert arrivals == [("TopicTest", 0, 1)]
        assert s.commit() == 0  # nothing left
        assert s.flush() == r.end_offset
    finally:
        s.shutdown()


def test_commit_honours_least_pages_and_thorough_interval(tmp_path: Path, clock: FakeClock) -> None:
    s = _open(tmp_path, clock, **POOL)
    try:
        small = s.put_message(make_message(body=b"s" * 100))
        assert s.commit() == 0  # 1 page pending < commitCommitLogLeastPages (4), interval not passed
        clock.advance(0.1)
        assert s.commit() == 0
        # Four page boundaries crossed: committed without waiting for the thorough interval.
        big = [s.put_message(make_message(body=b"b" * 6000)) for _ in range(2)]
        assert big[-1].end_offset // 4096 < 4
        assert s.commit() == 0
        big.append(s.put_message(make_message(body=b"b" * 6000)))
        assert big[-1].end_offset // 4096 >= 4
        assert s.commit() == big[-1].end_offset
        assert s.get_max_offset_in_queue("TopicTest", 0) == 4
        # The commit reset the thorough timer: a small append now waits for least pages or 200 ms.
        tail = s.put_message(make_message(body=b"t"))
        clock.advance(0.199)
        assert s.commit() == 0
        clock.advance(0.001)
        assert s.commit() == tail.wrote_bytes
        # An explicit thorough commit ignores both.
        last = s.put_message(make_message(body=b"x"))
        assert s.commit(thorough=True) == last.wrote_bytes
        assert s.get_max_offset_in_queue("TopicTest", 0) == 6
        assert small.wrote_offset == 0
    finally:
        s.shutdown()


def test_flush_writes_only_committed_data(tmp_path: Path, clock: FakeClock) -> None:
    s = _open(tmp_path, clock, **POOL)
    try:
        a = s.put_message(make_message(body=b"a" * 500))
        s.commit(thorough=True)
        b = s.put_message(make_message(body=b"b" * 500))
        assert s.flush() == a.end_offset
        assert s.flushed_offset == a.end_offset < b.end_offset
        assert not s.wait_flushed(b.end_offset, 0.05)  # not committed: cannot become durable
        s.commit(thorough=True)
        assert s.flush() == b.end_offset
    finally:
        s.shutdown()


# ---- files ----------------------------------------------------------------------------------------
def _workload(s: MessageStore, clock: FakeClock, commit_every: int | None) -> list[PutMessageResult]:
    results = []
    for i in range(260):  # over 4 segments: rolls with blank records, buffer reuse
        body = bytes([65 + i % 26]) * (200 + (i * 37) % 1500)
        results.append(
            s.put_message(
                make_message(queue_id=i % 3, body=body, tags=f"T{i % 4}", keys=f"k{i}", uniq=f"U{i}")
            )
        )
        clock.advance(0.013)
        if commit_every and i % commit_every == 0:
            s.commit()
    return results


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in {"lock"}
    }


@pytest.mark.parametrize("commit_every", [None, 1, 7])
def test_files_are_byte_identical_to_direct_writes(tmp_path: Path, commit_every: int | None) -> None:
    direct_clock, pooled_clock = FakeClock(), FakeClock()
    direct = _open(tmp_path / "direct", direct_clock)
    pooled = _open(tmp_path / "pooled", pooled_clock, **POOL)
    expected = _workload(direct, direct_clock, None)
    got = _workload(pooled, pooled_clock, commit_every)
    assert [(r.wrote_offset, r.queue_offset, r.msg_id) for r in got] == [
        (r.wrote_offset, r.queue_offset, r.msg_id) for r in expected
    ]
    assert got[-1].end_offset > 3 * SEGMENT
    direct.shutdown()
    pooled.shutdown()
    direct_files, pooled_files = _tree(tmp_path / "direct"), _tree(tmp_path / "pooled")
    # Index files are named by their creation time, which with the pool is the (later) commit time.
    direct_index = [data for name, data in direct_files.items() if name.startswith("index")]
    pooled_index = [data for name, data in pooled_files.items() if name.startswith("index")]
    assert len(direct_index) >= 2 and pooled_index == direct_index
    direct_files = {k: v for k, v in direct_files.items() if not k.startswith("index")}
    pooled_files = {k: v for k, v in pooled_files.items() if not k.startswith("index")}
    assert sorted(direct_files) == sorted(pooled_files)
    assert sum(name.startswith("commitlog") for name in direct_files) >= 5  # 4+ written, 1 pre-allocated
    assert any(name.startswith("consumequeue") for name in direct_files)
    for name, data in direct_files.items():
        assert pooled_files[name] == data, name


def test_segment_roll_writes_the_blank_record_through_the_buffer(tmp_path: Path, clock: FakeClock) -> None:
    s = _open(tmp_path, clock, **POOL)
    try:
        results = []
        while not results or results[-1].wrote_offset < SEGMENT:
            results.append(s.put_message(make_message(body=b"r" * 3000)))
        before_roll, after_roll = results[-2], results[-1]
        assert after_roll.wrote_offset == SEGMENT
        # The roll committed the finished segment (blank included) but not the new record.
        assert s.get_max_phy_offset() == SEGMENT
        assert s.get_max_offset_in_queue("TopicTest", 0) == len(results) - 1
        segment0 = (tmp_path / "commitlog" / f"{0:020d}").read_bytes()
        blank_at = before_roll.end_offset
        remaining = SEGMENT - blank_at
        assert int.from_bytes(segment0[blank_at : blank_at + 4], "big") == remaining
        assert int.from_bytes(segment0[blank_at + 4 : blank_at + 8], "big") == BLANK_MAGIC
        assert segment0[blank_at + 8 :] == bytes(remaining - 8)
        assert s.committer is not None and s.committer.pool.allocated == 1  # the buffer was reused
        assert s.runtime_info()["remainTransientStoreBufferNumbs"] == "1"
        assert s.look_message_by_offset(after_roll.wrote_offset) is None
        s.commit(thorough=True)
        assert s.look_message_by_offset(after_roll.wrote_offset).body == b"r" * 3000  # type: ignore[union-attr]
        assert len(_bodies(s, offset=len(results) - 3)) == 3
    finally:
        s.shutdown()


# ---- shutdown and crash ---------------------------------------------------------------------------
def test_shutdown_commits_and_loses_nothing(tmp_path: Path, clock: FakeClock) -> None:
    s = _open(tmp_path, clock, **POOL)
    results = [s.put_message(make_message(body=b"m%d" % i * 400, keys=f"k{i}")) for i in range(200)]
    assert s.get_max_phy_offset() < results[-1].end_offset  # the tail is still in the buffer
    s.shutdown()
    assert not (tmp_path / "abort").exists()
    s = _open(tmp_path, clock)  # reopened WITHOUT the pool: the files alone hold everything
    try:
        assert s.last_exit_ok
        assert s.get_max_phy_offset() == results[-1].end_offset
        assert s.get_max_offset_in_queue("TopicTest", 0) == 200
        assert s.look_message_by_offset(results[-1].wrote_offset).body == b"m199" * 400  # type: ignore[union-attr]
        assert len(s.query_message("TopicTest", "k199", 4, 0, 1 << 62).buffers) == 1
    finally:
        s.shutdown()


def test_crash_loses_only_uncommitted_data_and_recovers(tmp_path: Path, clock: FakeClock) -> None:
    s = _open(tmp_path, clock, **POOL)
    committed = [s.put_message(make_message(queue_id=i % 2, body=b"c%d" % i * 300)) for i in range(300)]
    s.commit(thorough=True)
    s.flush()
    lost = [s.put_message(make_message(queue_id=i % 2, body=b"u%d" % i * 300)) for i in range(5)]
    assert all(r.ok for r in lost) and lost[0].wrote_offset == committed[-1].end_offset
    s.abort()  # a crash: no commit, no clean shutdown
    assert (tmp_path / "abort").exists()
    s = _open(tmp_path, clock, **POOL)
    try:
        assert not s.last_exit_ok
        assert s.get_max_phy_offset() == committed[-1].end_offset
        assert [s.get_max_offset_in_queue("TopicTest", q) for q in (0, 1)] == [150, 150]
        assert s.look_message_by_offset(lost[0].wrote_offset) is None
        assert s.look_message_by_offset(committed[-1].wrote_offset).body == b"c299" * 300  # type: ignore[union-attr]
        # Appending continues where the committed log ended; the lost queue offsets are reused.
        again = s.put_message(make_message(queue_id=0, body=b"after"))
        assert (again.wrote_offset, again.queue_offset) == (committed[-1].end_offset, 150)
        s.commit(thorough=True)
        assert _bodies(s, 0, 149) == [b"c298" * 300, b"after"]
    finally:
        s.shutdown()
    s = _open(tmp_path, clock, **POOL)
    try:
        assert s.last_exit_ok and s.get_max_offset_in_queue("TopicTest", 0) == 151
    finally:
        s.shutdown()


def test_checkpoint_names_only_committed_messages(tmp_path: Path, clock: FakeClock) -> None:
    s = _open(tmp_path, clock, **POOL)
    try:
        first = s.put_message(make_message(body=b"a"))
        s.commit(thorough=True)
        clock.advance(5)
        s.put_message(make_message(body=b"b"))
        s.flush()
        assert s.checkpoint is not None
        assert s.checkpoint.physic_msg_timestamp == first.store_timestamp
    finally:
        s.shutdown()
