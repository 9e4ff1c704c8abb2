"""Group commit (SYNC_FLUSH), flush timeouts, retention of expired files, the disk-full refusal and the
HA hooks (a slave store fed with the master's log bytes ends up with the same queues and index)."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

from orbitmq.common.clock import FakeClock
from orbitmq.message.codec import decode_record
from orbitmq.store import GetMessageStatus, MessageStore, PutMessageStatus
from orbitmq.store.flush import FlushService

from .conftest import make_message, small_config


def test_group_commit_satisfies_many_waiters(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path, flush_disk_type="SYNC_FLUSH"))
    s.load()
    s.start()
    try:
        outcomes: list[bool] = []
        done = threading.Event()
        lock = threading.Lock()
        n = 50

        def cb(ok: bool) -> None:
            with lock:
                outcomes.append(ok)
                if len(outcomes) == n:
                    done.set()

        for i in range(n):
            r = s.put_message(make_message(body=b"%d" % i))
            s.request_flush(r.end_offset, cb)
        assert done.wait(10)
        assert outcomes == [True] * n
        assert s.flushed_offset >= s.get_max_phy_offset()
        assert s.wait_flushed(s.get_max_phy_offset(), 5)
    finally:
        s.shutdown()


def test_async_flush_thread_flushes_on_request(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path, flush_interval_commit_log=60_000))
    s.load()
    s.start()
    try:
        r = s.put_message(make_message())
        assert s.flushed_offset < r.end_offset
        assert s.wait_flushed(r.end_offset, 10)
        assert s.flushed_offset >= r.end_offset
    finally:
        s.shutdown()


def test_flush_request_times_out_with_false(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path, flush_disk_type="SYNC_FLUSH", sync_flush_timeout=0))
    s.load()
    assert isinstance(s.flusher, FlushService)
    results: list[bool] = []
    # The flusher thread is not running and the request can never be met: it expires on the next round.
    s.request_flush(10**9, results.append)
    s.flusher._complete_requests()
    assert results == [False]
    s.shutdown()


def _age_files(directory: Path, seconds: float) -> None:
    for name in os.listdir(directory):
        path = directory / name
        if path.is_dir():
            _age_files(path, seconds)
        else:
            st = path.stat()
            os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


def test_retention_deletes_expired_segments_and_orphaned_queue_and_index_files(tmp_path: Path) -> None:
    clock = FakeClock(now_ms=int(time.time() * 1000))
    hour = time.localtime(clock.now_ms() // 1000).tm_hour
    other_hour = (hour + 12) % 24
    s = MessageStore(
        small_config(tmp_path, delete_when=f"{other_hour:02d}", mapped_file_size_consume_queue=50 * 20),
        clock=clock,
        disk_usage=lambda path: 0.1,
    )
    s.load()
    s.start()
    try:
        for i in range(600):
            s.put_message(make_message(body=b"e" * 500, keys=f"k{i}"))
        segments = len(os.listdir(tmp_path / "commitlog"))
        assert segments >= 6
        # Not expired yet; then expired but not the deletion hour; then forced.
        assert s.clean_expired_files(force=True).commit_log_files == 0
        _age_files(tmp_path, 73 * 3600)
        assert s.clean_expired_files().commit_log_files == 0
        result = s.clean_expired_files(force=True)
        assert result.commit_log_files > 0 and result.consume_queue_files > 0 and result.index_files > 0
        min_phy = s.get_min_phy_offset()
        assert min_phy > 0 and min_phy % (64 * 1024) == 0
        min_q = s.get_min_offset_in_queue("TopicTest", 0)
        assert min_q > 0
        first = s.get_messages("g", "TopicTest", 0, min_q, 1, None)
        assert first.status is GetMessageStatus.FOUND
        assert decode_record(first.buffers[0]).commit_log_offset >= min_phy
        too_small = s.get_messages("g", "TopicTest", 0, 0, 1, None)
        assert too_small.status is GetMessageStatus.OFFSET_TOO_SMALL and too_small.next_begin_offset == min_q
        assert s.query_message("TopicTest", "k0", 5, 0, 1 << 62).buffers == []
        assert len(s.query_message("TopicTest", "k599", 5, 0, 1 << 62).buffers) == 1
    finally:
        s.shutdown()
    # The trimmed store loads again with the same min offsets.
    s = MessageStore(small_config(tmp_path, mapped_file_size_consume_queue=50 * 20), clock=clock)
    s.load()
    s.start()
    try:
        assert s.get_min_phy_offset() == min_phy
        assert s.get_min_offset_in_queue("TopicTest", 0) == min_q
    finally:
        s.shutdown()


def test_disk_full_refuses_writes_and_cleans_unexpired_files(tmp_path: Path) -> None:
    usage = [0.5]
    s = MessageStore(small_config(tmp_path), disk_usage=lambda path: usage[0])
    s.load()
    s.start()
    try:
        for _ in range(300):
            s.put_message(make_message(body=b"d" * 500))
        usage[0] = 0.95
        result = s.clean_expired_files()
        assert result.disk_full and result.commit_log_files > 0  # above 0.85: deleted although not expired
        refused = s.put_message(make_message())
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and "disk" in refused.remark
        usage[0] = 0.5
        s.clean_expired_files()
        assert s.put_message(make_message()).ok
    finally:
        s.shutdown()


def test_slave_replays_master_log_in_arbitrary_chunks(tmp_path: Path) -> None:
    clock = FakeClock()
    master = MessageStore(small_config(tmp_path / "m"), clock=clock)
    slave = MessageStore(small_config(tmp_path / "s", broker_role="SLAVE"), clock=clock)
    master.load()
    master.start()
    slave.load()
    slave.start()
    try:
        for i in range(400):
            master.put_message(make_message(queue_id=i % 4, body=b"h" * (i % 300), keys=f"key{i}", tags="T"))
            clock.advance(0.01)
        rng = random.Random(7)
        offset = 0
        assert not slave.append_to_commit_log(5, b"x")
        while offset < master.get_max_phy_offset():
            data = master.get_commit_log_data(offset, rng.randint(1, 5000))
            assert data is not None
            assert slave.append_to_commit_log(offset, bytes(data))
            offset += len(data)
        assert slave.get_max_phy_offset() == master.get_max_phy_offset()
        for q in range(4):
            assert slave.get_max_offset_in_queue("TopicTest", q) == master.get_max_offset_in_queue(
                "TopicTest", q
            )
            a = master.get_messages("g", "TopicTest", q, 0, 32, None)
            b = slave.get_messages("g", "TopicTest", q, 0, 32, None)
            assert [bytes(x) for x in a.buffers] == [bytes(x) for x in b.buffers]
        found = slave.query_message("TopicTest", "key123", 5, 0, 1 << 62)
        assert [decode_record(b).body for b in found.buffers] == [b"h" * 123]
    finally:
        master.shutdown()
        slave.shutdown()
    # The slave's directory recovers like any other.
    slave = MessageStore(small_config(tmp_path / "s", broker_role="SLAVE"), clock=clock)
    slave.load()
    slave.start()
    try:
        assert slave.get_max_offset_in_queue("TopicTest", 3) == 100
    finally:
        slave.shutdown()


def test_segment_that_cannot_be_created_fails_the_put_then_recovers(store: MessageStore) -> None:
    blocker = Path(store.config.commit_log_dir) / f"{2 * 64 * 1024:020d}"
    blocker.mkdir(parents=True)  # squats the name of the third segment
    statuses = []
    for _ in range(200):
        statuses.append(store.put_message(make_message(body=b"c" * 1000)).status)
        if statuses[-1] is not PutMessageStatus.PUT_OK:
            break
    assert statuses[-1] is PutMessageStatus.CREATE_MAPEDFILE_FAILED
    assert store.get_max_phy_offset() == 2 * 64 * 1024  # the second segment was closed with a blank
    blocker.rmdir()
    r = store.put_message(make_message(body=b"c" * 1000))
    assert r.ok and r.wrote_offset == 2 * 64 * 1024


def test_empty_slave_starting_at_a_later_segment_pre_blanks_its_queues(tmp_path: Path) -> None:
    clock = FakeClock()
    master = MessageStore(small_config(tmp_path / "m"), clock=clock)
    slave = MessageStore(small_config(tmp_path / "s", broker_role="SLAVE"), clock=clock)
    master.load()
    master.start()
    slave.load()
    slave.start()
    try:
        for _ in range(150):
            master.put_message(make_message(body=b"p" * 1000))
        start = 2 * 64 * 1024
        assert not slave.append_to_commit_log(start + 1, b"x")
        offset = start
        while offset < master.get_max_phy_offset():
            data = master.get_commit_log_data(offset, 32768)
            assert data is not None and slave.append_to_commit_log(offset, bytes(data))
            offset += len(data)
        first = master.get_messages("g", "TopicTest", 0, 0, 1, None)
        assert first.status is GetMessageStatus.FOUND
        min_q = slave.get_min_offset_in_queue("TopicTest", 0)
        assert min_q > 0
        assert slave.get_max_offset_in_queue("TopicTest", 0) == 150
        cq_file = tmp_path / "s" / "consumequeue" / "TopicTest" / "0" / f"{0:020d}"
        data = cq_file.read_bytes()
        assert data[:20] == bytes.fromhex("00000000000000007fffffff0000000000000000")
        got = slave.get_messages("g", "TopicTest", 0, min_q, 32, None)
        assert got.status is GetMessageStatus.FOUND
        assert decode_record(got.buffers[0]).queue_offset == min_q
        assert decode_record(got.buffers[0]).commit_log_offset == start
    finally:
        master.shutdown()
        slave.shutdown()


def test_group_commit_goes_on_while_a_consume_queue_flush_is_stuck(tmp_path: Path) -> None:
    # RocketMQ flushes consume queues on their own thread: a slow queue or index fsync must not hold the
    # commit log's group commit (every SYNC_FLUSH send waits for it).
    s = MessageStore(small_config(tmp_path, flush_disk_type="SYNC_FLUSH", flush_interval_consume_queue=1))
    s.load()
    s.start()
    try:
        flusher = s.flusher
        assert flusher is not None
        with flusher.logics_lock:  # a consume-queue flush in progress that does not finish
            for i in range(20):
                r = s.put_message(make_message(body=b"%d" % i))
                assert s.wait_flushed(r.end_offset, 10)
        # Positive control: once the stuck flush ends, the logics thread writes the checkpoint again.
        checkpoint = s.checkpoint
        assert checkpoint is not None
        before = checkpoint.logics_msg_timestamp
        deadline = time.monotonic() + 10
        while checkpoint.logics_msg_timestamp == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert checkpoint.logics_msg_timestamp > before
    finally:
        s.shutdown()
