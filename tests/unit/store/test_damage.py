"""Damaged records and consume-queue entries: recovery skips and reports them instead of cutting the log
after them, the queues are rebuilt, and reads refuse a damaged record instead of serving a wrong body."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.message.codec import decode_record
from orbitmq.store import MessageStore, PutMessageResult
from orbitmq.store.consume_queue import CQ_ENTRY_SIZE

from .conftest import make_message, small_config

SEGMENT = 64 * 1024


def _open(root: Path, clock: FakeClock, **kw: object) -> MessageStore:
    s = MessageStore(small_config(root, **kw), clock=clock)
    s.load()
    s.start()
    return s


def _fill(store: MessageStore, clock: FakeClock, n: int) -> list[PutMessageResult]:
    out = []
    for i in range(n):
        out.append(store.put_message(make_message(queue_id=i % 2, body=b"m%04d" % i * 60, keys=f"key{i}")))
        clock.advance(0.01)
    return out


def _flip(root: Path, offset: int, delta: int) -> None:
    path = root / "commitlog" / f"{offset - offset % SEGMENT:020d}"
    data = bytearray(path.read_bytes())
    data[offset % SEGMENT + delta] ^= 0xFF
    path.write_bytes(data)


def _offsets(store: MessageStore, queue_id: int) -> list[int]:
    """The commit-log offsets of every message a consumer pulls from the queue."""
    out: list[int] = []
    offset = 0
    while offset < store.get_max_offset_in_queue("TopicTest", queue_id):
        got = store.get_messages("g", "TopicTest", queue_id, offset, 32, None)
        out += [decode_record(b).commit_log_offset for b in got.buffers]
        offset = got.next_begin_offset
    return out


def _reopened(
    root: Path, n: int, damage: Callable[[list[PutMessageResult]], None], *, crash: bool = False, **kw: object
) -> tuple[MessageStore, list[PutMessageResult]]:
    """A store holding `n` messages, stopped (or crashed), damaged, and opened again."""
    clock = FakeClock()
    s = _open(root, clock)
    results = _fill(s, clock, n)
    s.abort() if crash else s.shutdown()
    damage(results)
    return _open(root, clock, **kw), results


def _flip_cq(root: Path, pos: int, mask: int) -> None:
    path = root / "consumequeue" / "TopicTest" / "0" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    data[pos] ^= mask
    path.write_bytes(data)


def _end(results: list[PutMessageResult]) -> int:
    return results[-1].wrote_offset + results[-1].wrote_bytes


@pytest.mark.parametrize(("victim", "delta", "crash"), [(100, 2, False), (100, 4, True), (100, 150, True)])
def test_damaged_record_is_skipped_and_refused(tmp_path: Path, victim: int, delta: int, crash: bool) -> None:
    """TOTALSIZE, magic code or body damaged in a segment that is not the tail: recovery resumes at the
    next verified record; the damaged one is never served, every later one is."""

    def damage(results: list[PutMessageResult]) -> None:
        assert results[victim].wrote_offset // SEGMENT < results[-1].wrote_offset // SEGMENT
        _flip(tmp_path, results[victim].wrote_offset, delta)

    s, results = _reopened(tmp_path, 300, damage, crash=crash)
    try:
        v = results[victim]
        assert s.get_max_phy_offset() == _end(results)
        assert [(r.start, r.end) for r in s.reads.damage.ranges] == [
            (v.wrote_offset, v.wrote_offset + v.wrote_bytes)
        ]
        assert _offsets(s, 0) == [x.wrote_offset for i, x in enumerate(results) if i % 2 == 0 and i != victim]
        assert s.look_message_by_offset(v.wrote_offset) is None
        assert s.query_message("TopicTest", f"key{victim}", 5, 0, 1 << 62).buffers == []
        assert len(s.query_message("TopicTest", f"key{victim + 2}", 5, 0, 1 << 62).buffers) == 1
        assert s.put_message(make_message(queue_id=0)).queue_offset == 150  # the damaged one keeps its offset
    finally:
        s.shutdown()


def test_damage_of_the_last_record_ends_the_log(tmp_path: Path) -> None:
    s, results = _reopened(tmp_path, 30, lambda r: _flip(tmp_path, r[-1].wrote_offset, 150), crash=True)
    try:
        assert s.get_max_phy_offset() == results[-1].wrote_offset
        assert s.reads.damage.ranges == []
        assert s.get_max_offset_in_queue("TopicTest", 1) == 14
    finally:
        s.shutdown()


def test_zeros_in_the_last_segment_still_end_the_log(tmp_path: Path) -> None:
    """No search past the end of what was written: a clean restart costs what it did."""
    s, results = _reopened(tmp_path, 50, lambda _r: None)
    try:
        assert s.get_max_phy_offset() == _end(results)
        assert s.reads.damage.ranges == []
    finally:
        s.shutdown()


@pytest.mark.parametrize(
    ("byte", "mask", "crash"),
    [
        (5, 0xFF, False),  # entry 40 points 16 MiB further: past entry 41
        (6, 0x40, True),  # entry 40 points 16 KiB back: into entry 39's record
    ],
)
def test_damaged_consume_queue_entry_is_rebuilt_from_the_log(
    tmp_path: Path, byte: int, mask: int, crash: bool
) -> None:
    s, results = _reopened(
        tmp_path, 200, lambda _r: _flip_cq(tmp_path, 40 * CQ_ENTRY_SIZE + byte, mask), crash=crash
    )
    try:
        assert _offsets(s, 0) == [x.wrote_offset for i, x in enumerate(results) if i % 2 == 0]
        assert s.get_max_offset_in_queue("TopicTest", 0) == 100
    finally:
        s.shutdown()


def test_wrong_size_in_a_consume_queue_entry_serves_the_whole_record(tmp_path: Path) -> None:
    # Size one less: no overlap with the next entry, recovery cannot tell; a checking read does.
    s, results = _reopened(
        tmp_path, 20, lambda _r: _flip_cq(tmp_path, 3 * CQ_ENTRY_SIZE + 11, 0x01), check_crc_on_read=True
    )
    try:
        assert _offsets(s, 0) == [x.wrote_offset for i, x in enumerate(results) if i % 2 == 0]
    finally:
        s.shutdown()


@pytest.mark.parametrize("check_crc_on_read", [True, False])
def test_body_damage_recovery_does_not_read(tmp_path: Path, check_crc_on_read: bool) -> None:
    """A body flipped in the first segment, which a clean start does not check: checkCRCOnRead refuses
    it on a pull and a lookup; without it the wrong body goes out, as in RocketMQ."""
    s, results = _reopened(
        tmp_path, 800, lambda r: _flip(tmp_path, r[10].wrote_offset, 150), check_crc_on_read=check_crc_on_read
    )
    try:
        assert results[-1].wrote_offset // SEGMENT >= 4
        assert s.reads.damage.ranges == []  # not in the segments recovery checked
        served = _offsets(s, 0)
        assert (results[10].wrote_offset in served) is not check_crc_on_read
        assert (s.look_message_by_offset(results[10].wrote_offset) is None) is check_crc_on_read
        assert served[-1] == results[-2].wrote_offset
    finally:
        s.shutdown()
