"""ConsumeQueue: entry layout, rolling across files, the duplicate guard, pre-blank and gap fill,
truncation to a commit-log offset and min-offset correction."""

from __future__ import annotations

import struct
from pathlib import Path

from orbitmq.store.consume_queue import PRE_BLANK_SIZE, ConsumeQueue


def _cq(tmp_path: Path) -> ConsumeQueue:
    return ConsumeQueue(str(tmp_path), "T", 0, 10 * 20)


def test_entries_roll_across_files_and_duplicates_are_skipped(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    entries = [(i * 100, 100, i, i) for i in range(25)]
    assert cq.put_entries(entries[:7]) == 7
    assert cq.put_entries(entries[:12]) == 5  # the first 7 are already there
    assert cq.put_entries(entries) == 13
    assert cq.max_offset == 25 and cq.max_physic_offset == 2500
    assert sorted(p.name for p in (tmp_path / "T" / "0").iterdir()) == [f"{n:020d}" for n in (0, 200, 400)]
    assert cq.entry(24) == (2400, 100, 24)
    raw = (tmp_path / "T" / "0" / f"{200:020d}").read_bytes()
    assert raw[:20] == struct.pack(">qiq", 1000, 100, 10)
    view, count = cq.index_buffer(13)  # type: ignore[misc]
    assert count == 7 and bytes(view[:20]) == struct.pack(">qiq", 1300, 100, 13)
    assert cq.roll_next_file(13) == 20
    cq.close()


def test_pre_blank_and_gap_fill_keep_logical_offsets(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    cq.put_entries([(5000, 50, 0, 13)])
    assert cq.min_offset == 13 and cq.max_offset == 14
    raw = (tmp_path / "T" / "0" / f"{200:020d}").read_bytes()  # entries 10..19
    assert raw[:60] == struct.pack(">qiq", 0, PRE_BLANK_SIZE, 0) * 3
    assert raw[60:80] == struct.pack(">qiq", 5000, 50, 0)
    assert cq.entry(10) is None  # below the min offset
    cq.put_entries([(6000, 50, 0, 16)])  # a gap of two entries
    assert cq.max_offset == 17 and cq.entry(14) == (0, PRE_BLANK_SIZE, 0) and cq.entry(16) == (6000, 50, 0)
    cq.close()


def test_truncate_recover_and_correct_min_offset(tmp_path: Path) -> None:
    cq = _cq(tmp_path)
    cq.put_entries([(i * 100, 100, 0, i) for i in range(25)])
    cq.truncate_dirty_logic_files(1700)  # the log now ends where entry 17 started
    assert cq.max_offset == 17 and cq.max_physic_offset == 1700
    cq.correct_min_offset(1000)
    assert cq.min_offset == 10
    cq.close()
    again = _cq(tmp_path)
    again.load()
    again.recover()
    assert again.max_offset == 17 and again.max_physic_offset == 1700
    assert again.delete_expired_files(1000) == 1 and again.min_offset == 10
    again.close()


def test_put_entry_writes_as_put_entries_does(tmp_path: Path) -> None:
    # The single-message path: the same bytes as put_entries, across a file roll, with the duplicate guard
    # and the gap fill of the general path.
    one = ConsumeQueue(str(tmp_path / "one"), "T", 0, 10 * 20)
    many = ConsumeQueue(str(tmp_path / "many"), "T", 0, 10 * 20)
    entries = [(i * 100, 100, i, i) for i in range(3, 15)]  # starts at 3: a pre-blanked first file
    many.put_entries(entries)
    assert [one.put_entry(*e) for e in entries] == [1] * len(entries)
    assert one.put_entry(*entries[5]) == 0  # already there
    assert one.put_entry(1400, 100, 0, 14) == 0  # below the max physical offset
    for name in (f"{0:020d}", f"{200:020d}"):
        assert (tmp_path / "one" / "T" / "0" / name).read_bytes() == (
            tmp_path / "many" / "T" / "0" / name
        ).read_bytes()
    assert one.put_entry(9000, 50, 7, 17) == 1  # a gap of two entries: blanks, as put_entries writes
    assert one.max_offset == 18 and one.entry(15) == (0, PRE_BLANK_SIZE, 0) and one.entry(17) == (9000, 50, 7)
    one.close()
    many.close()


def _tail_is_newest(cq: ConsumeQueue) -> bool:
    files = cq.files.files
    return cq.files.tail is (files[-1] if files else None)


def test_appends_follow_the_newest_file_through_rolls_truncation_and_retention(tmp_path: Path) -> None:
    # put_entry writes through the queue's `tail` segment, kept beside the file list: every change of the
    # list (a roll, truncation dropping files, retention, a reload) moves it.
    cq = _cq(tmp_path)
    assert _tail_is_newest(cq) and cq.max_offset == 0
    for i in range(25):
        assert cq.put_entry(i * 100, 100, i, i) == 1
        assert _tail_is_newest(cq)
    assert len(cq.files.files) == 3
    cq.truncate_dirty_logic_files(1300)  # the third file goes, the second keeps entries 10..12
    assert _tail_is_newest(cq) and len(cq.files.files) == 2 and cq.max_offset == 13
    assert cq.put_entry(1300, 100, 77, 13) == 1  # into the second file, where entry 13 belongs
    assert cq.entry(13) == (1300, 100, 77)
    raw = (tmp_path / "T" / "0" / f"{200:020d}").read_bytes()
    assert raw[60:80] == struct.pack(">qiq", 1300, 100, 77)
    assert cq.delete_expired_files(1000) == 1 and _tail_is_newest(cq)
    cq.close()
    again = _cq(tmp_path)
    again.load()
    again.recover()
    assert _tail_is_newest(again) and again.max_offset == 14
    assert again.put_entry(1400, 100, 0, 14) == 1 and again.entry(14) == (1400, 100, 0)
    again.destroy()
    assert _tail_is_newest(again) and again.files.tail is None
