"""Recovery (fact sheet 6.7): clean restarts, crashes with torn or garbled tails, consume queues and
index trimmed or rebuilt to agree with the log, topicQueueTable rebuilt."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.common.errors import StoreError
from orbitmq.message.codec import decode_record
from orbitmq.store import GetMessageStatus, MessageStore, PutMessageResult

from .conftest import make_message, small_config


def _open(root: Path, clock: FakeClock, **kw: object) -> MessageStore:
    s = MessageStore(small_config(root, **kw), clock=clock)
    s.load()
    s.start()
    return s


def _fill(store: MessageStore, clock: FakeClock, n: int, queues: int = 3) -> list[PutMessageResult]:
    out = []
    for i in range(n):
        out.append(store.put_message(make_message(queue_id=i % queues, body=b"r%d" % i * 30, keys=f"key{i}")))
        clock.advance(0.01)
    return out


def _segment(root: Path, offset: int) -> Path:
    return root / "commitlog" / f"{offset - offset % (64 * 1024):020d}"


def test_clean_restart_keeps_everything(tmp_path: Path) -> None:
    clock = FakeClock()
    s = _open(tmp_path, clock)
    results = _fill(s, clock, 500)
    s.shutdown()
    s = _open(tmp_path, clock)
    try:
        assert s.last_exit_ok
        assert s.get_max_phy_offset() == results[-1].end_offset
        assert [s.get_max_offset_in_queue("TopicTest", q) for q in range(3)] == [167, 167, 166]
        r = s.put_message(make_message(queue_id=1))
        assert r.queue_offset == 167 and r.wrote_offset == results[-1].end_offset
    finally:
        s.shutdown()


def test_cut_at_every_byte_of_the_last_record_recovers_to_the_previous() -> None:
    # Its own temporary directory: this test runs for seconds, and pytest sessions started meanwhile on
    # the same machine prune old numbered tmp_path directories.
    with tempfile.TemporaryDirectory(prefix="orbitmq-cut-") as tmp:
        _cut_at_every_byte(Path(tmp))


def _cut_at_every_byte(tmp_path: Path) -> None:
    clock = FakeClock()
    golden = tmp_path / "golden"
    s = _open(golden, clock)
    results = _fill(s, clock, 40)
    s.abort()  # a crash: the abort file stays
    last = results[-1]
    seg = _segment(golden, last.wrote_offset)
    pos = last.wrote_offset % (64 * 1024)
    work = tmp_path / "work"
    for cut in range(last.wrote_bytes):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(golden, work)
        path = _segment(work, last.wrote_offset)
        data = bytearray(seg.read_bytes())
        data[pos + cut : pos + last.wrote_bytes] = bytes(last.wrote_bytes - cut)
        path.write_bytes(data)
        r = _open(work, clock)
        try:
            assert not r.last_exit_ok
            assert r.get_max_phy_offset() == last.wrote_offset, cut
            assert r.get_max_offset_in_queue("TopicTest", 39 % 3) == 13  # the 14th message is gone
            assert r.query_message("TopicTest", "key39", 5, 0, 1 << 62).buffers == []
            assert len(r.query_message("TopicTest", "key38", 5, 0, 1 << 62).buffers) == 1
            again = r.put_message(make_message(queue_id=0))
            assert again.wrote_offset == last.wrote_offset and again.queue_offset == 13
        finally:
            r.shutdown()


def test_crash_rebuilds_lost_consume_queue_and_index(tmp_path: Path) -> None:
    clock = FakeClock()
    s = _open(tmp_path, clock, message_index_safe=True)
    results = _fill(s, clock, 400)
    s.flush()
    s.abort()
    shutil.rmtree(tmp_path / "consumequeue")
    for name in os.listdir(tmp_path / "index"):
        os.unlink(tmp_path / "index" / name)
    s = _open(tmp_path, clock, message_index_safe=True)
    try:
        assert [s.get_max_offset_in_queue("TopicTest", q) for q in range(3)] == [134, 133, 133]
        for i in (0, 150, 399):
            found = s.query_message("TopicTest", f"key{i}", 5, 0, 1 << 62)
            assert [decode_record(b).commit_log_offset for b in found.buffers] == [results[i].wrote_offset]
        got = s.get_messages("g", "TopicTest", 1, 100, 32, None)
        assert got.status is GetMessageStatus.FOUND
        assert decode_record(got.buffers[0]).commit_log_offset == results[301].wrote_offset
    finally:
        s.shutdown()


def test_crash_while_creating_a_file_leaves_an_empty_one_that_is_removed(tmp_path: Path) -> None:
    """A crash between creating the newest commit-log, consume-queue or index file and sizing it leaves
    a 0-byte file (seen under power cuts, tests/crash/powerloss): the store starts and rebuilds."""
    clock = FakeClock()
    s = _open(tmp_path, clock)
    results = _fill(s, clock, 300)
    s.flush()
    s.abort()
    commit_log = tmp_path / "commitlog"
    last = max(int(n) for n in os.listdir(commit_log))
    empty = [
        commit_log / f"{last + 64 * 1024:020d}",
        tmp_path / "consumequeue" / "TopicTest" / "0" / f"{10**9:020d}",
        tmp_path / "index" / "99999999999999999",
    ]
    for path in empty:
        path.touch()
    s = _open(tmp_path, clock)
    try:
        assert not any(path.exists() for path in empty)
        assert s.get_max_phy_offset() == results[-1].end_offset
        assert [s.get_max_offset_in_queue("TopicTest", q) for q in range(3)] == [100, 100, 100]
        found = s.query_message("TopicTest", "key299", 5, 0, 1 << 62)
        assert [decode_record(b).commit_log_offset for b in found.buffers] == [results[299].wrote_offset]
    finally:
        s.shutdown()


def test_consume_queue_ahead_of_log_is_truncated(tmp_path: Path) -> None:
    clock = FakeClock()
    s = _open(tmp_path, clock)
    results = _fill(s, clock, 60)
    s.abort()
    # The log lost its last 10 records (never flushed) but the consume queues still point at them.
    cut = results[50].wrote_offset
    for name in sorted(os.listdir(tmp_path / "commitlog")):
        start = int(name)
        path = tmp_path / "commitlog" / name
        data = bytearray(path.read_bytes())
        if start + len(data) > cut:
            keep = max(0, cut - start)
            data[keep:] = bytes(len(data) - keep)
            path.write_bytes(data)
    s = _open(tmp_path, clock)
    try:
        assert s.get_max_phy_offset() == cut
        assert sum(s.get_max_offset_in_queue("TopicTest", q) for q in range(3)) == 50
        assert s.put_message(make_message(queue_id=2)).queue_offset == 16
    finally:
        s.shutdown()


def test_empty_store_and_missing_log_with_leftover_queues(tmp_path: Path) -> None:
    clock = FakeClock()
    s = _open(tmp_path, clock)
    _fill(s, clock, 10)
    s.shutdown()
    shutil.rmtree(tmp_path / "commitlog")
    s = _open(tmp_path, clock)
    try:
        assert s.get_max_phy_offset() == 0
        assert s.get_max_offset_in_queue("TopicTest", 0) == 0
        assert s.put_message(make_message()).queue_offset == 0
    finally:
        s.shutdown()


def test_corrupt_consume_queue_file_size_fails_load_and_releases_everything(tmp_path: Path) -> None:
    clock = FakeClock()
    s = _open(tmp_path, clock)
    _fill(s, clock, 5)
    s.shutdown()
    cq = tmp_path / "consumequeue" / "TopicTest" / "0" / f"{0:020d}"
    cq.write_bytes(cq.read_bytes()[:100])
    with pytest.raises(StoreError, match="expected"):
        MessageStore(small_config(tmp_path), clock=clock).load()
    # As in RocketMQ, a clean restart re-dispatches only past the furthest offset any queue references:
    # with every queue gone, that is the whole log.
    shutil.rmtree(tmp_path / "consumequeue")
    s = _open(tmp_path, clock)  # the lock was released; the queues are rebuilt from the log
    try:
        assert s.get_max_offset_in_queue("TopicTest", 0) == 2
    finally:
        s.shutdown()
