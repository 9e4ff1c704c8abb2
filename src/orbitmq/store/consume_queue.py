"""ConsumeQueue: the per topic-queue index of a commit log, one 20-byte entry per message.

Entry layout (fact sheet 6.4), big-endian::

    0       8                12                20
    | commit log offset (q) | size (i) | tags code (q) |

Files live in `consumequeue/<topic>/<queue id>/`, 6,000,000 bytes (300,000 entries) each, named by the
byte offset of their first entry. Logical offset = byte offset / 20. A queue whose first entry is not at
logical 0 starts with a file pre-filled with blank entries (offset 0, size 0x7FFFFFFF, tags 0).

The queue is derived data: the dispatcher writes it from the commit log and recovery trims it back to
the log. This module knows nothing of records or message properties.
"""

from __future__ import annotations

import logging
import os
import struct
from functools import lru_cache
from typing import Final

from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.paths import child_dir
from orbitmq.store.segment_queue import MappedFileQueue

log = logging.getLogger("orbitmq.store.recovery")
CQ_ENTRY_SIZE: Final = 20
PRE_BLANK_SIZE: Final = 0x7FFFFFFF
_ENTRY: Final = struct.Struct(">qiq")
CQ_ENTRY: Final = _ENTRY  # (commit log offset, size, tags code), big-endian
_BLANK_ENTRY: Final = _ENTRY.pack(0, PRE_BLANK_SIZE, 0)


@lru_cache(maxsize=256)
def _entries_struct(n: int) -> struct.Struct:
    return struct.Struct(">" + "qiq" * n)


class ConsumeQueue:
    def __init__(self, root_dir: str, topic: str, queue_id: int, file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        # Set (before any file goes) when the topic is deleted: the flusher skips it quietly.
        self.destroyed = False
        self.file_size = file_size
        self.entries_per_file = file_size // CQ_ENTRY_SIZE
        self.directory = os.path.join(child_dir(root_dir, topic), str(queue_id))
        self.files = MappedFileQueue(self.directory, file_size, defer_dir_sync=True)
        self.max_physic_offset = -1  # end (offset + size) of the last entry's record
        self.min_logic_offset = 0  # bytes

    # ---- offsets (logical, in entries) ----------------------------------------------------------
    @property
    def max_offset(self) -> int:
        tail = self.files.tail
        return 0 if tail is None else (tail.file_from_offset + tail.wrote_position) // CQ_ENTRY_SIZE

    @property
    def min_offset(self) -> int:
        return self.min_logic_offset // CQ_ENTRY_SIZE

    def roll_next_file(self, offset: int) -> int:
        return offset + self.entries_per_file - offset % self.entries_per_file

    def entry(self, offset: int) -> tuple[int, int, int] | None:
        """(commit log offset, size, tags code) of logical `offset`, or None if not present."""
        pos = offset * CQ_ENTRY_SIZE
        f = self.files.find(pos)
        if f is None or pos - f.file_from_offset >= f.wrote_position or offset < self.min_offset:
            return None
        entry: tuple[int, int, int] = _ENTRY.unpack_from(f.mm, pos - f.file_from_offset)
        return entry

    def index_buffer(self, offset: int) -> tuple[memoryview, int] | None:
        """The written entries from logical `offset` to the end of its file: (view, entry count)."""
        pos = offset * CQ_ENTRY_SIZE
        if offset < self.min_offset:
            return None
        f = self.files.find(pos)
        if f is None:
            return None
        start = pos - f.file_from_offset
        end = f.wrote_position
        if start >= end:
            return None
        return f.view(start, end - start), (end - start) // CQ_ENTRY_SIZE

    # ---- writing --------------------------------------------------------------------------------
    def put_entry(self, phy: int, size: int, tags: int, queue_offset: int) -> int:
        """`put_entries` of one entry (the single-message put), without building a list of tuples when
        it simply extends the queue; anything else (a duplicate, a gap, no file yet) goes through
        `put_entries`."""
        f = self.files.tail
        if (
            f is None
            or queue_offset * CQ_ENTRY_SIZE != f.file_from_offset + f.wrote_position
            or phy + size <= self.max_physic_offset
            or f.wrote_position >= f.file_size  # full: put_entries rolls to the next file
        ):
            return self.put_entries([(phy, size, tags, queue_offset)])
        return self._write_one(f, phy, size, tags)

    def _write_one(self, f: MappedFile, phy: int, size: int, tags: int) -> int:
        """One entry at the end of segment `f` (which has room)."""
        pos = f.wrote_position
        _ENTRY.pack_into(f.mm, pos, phy, size, tags)
        f.wrote_position = pos + CQ_ENTRY_SIZE
        self.max_physic_offset = phy + size
        return 1

    def put_entries(self, entries: list[tuple[int, int, int, int]]) -> int:
        """Append (commit log offset, size, tags code, queue offset) entries with consecutive queue offsets.

        Entries already present (the duplicate guard: record end <= max physical offset, or queue offset
        below the current end) are skipped, so re-dispatching a range is harmless. Returns how many
        entries were written.
        """
        current = self.files.max_offset // CQ_ENTRY_SIZE
        max_phy = self.max_physic_offset
        i = 0
        n = len(entries)
        while i < n and (entries[i][3] < current or entries[i][0] + entries[i][1] <= max_phy):
            i += 1
        if i == n:
            return 0
        first_qo = entries[i][3]
        if not self.files.files:
            self._create_first(first_qo)
        elif first_qo > current:
            # A gap (should not happen with a consistent log): keep logical offsets right with blanks.
            self._fill_blanks(current, first_qo)
        if i == n - 1:
            # One entry (the common single-message put): no chunking, no format lookup.
            phy, size, tags, queue_offset = entries[i]
            return self._write_one(
                self.files.last_file_for_append(queue_offset * CQ_ENTRY_SIZE), phy, size, tags
            )
        written = 0
        while i < n:
            pos = entries[i][3] * CQ_ENTRY_SIZE
            f = self.files.last_file_for_append(pos)
            room = (f.file_size - f.wrote_position) // CQ_ENTRY_SIZE
            chunk = entries[i : i + room]
            flat: list[int] = []
            for phy, size, tags, _ in chunk:
                flat += (phy, size, tags)
            _entries_struct(len(chunk)).pack_into(f.mm, f.wrote_position, *flat)
            f.wrote_position += len(chunk) * CQ_ENTRY_SIZE
            i += len(chunk)
            written += len(chunk)
        last = entries[-1]
        self.max_physic_offset = last[0] + last[1]
        return written

    def put_packed(self, first_queue_offset: int, packed: bytes | bytearray) -> int:
        """`put_entries` for entries already packed (CQ_ENTRY_SIZE bytes each, consecutive queue offsets
        from `first_queue_offset`): one copy per CQ file. Falls back to `put_entries` when the duplicate
        guard applies to the first entry (a re-dispatched range)."""
        count = len(packed) // CQ_ENTRY_SIZE
        if not count:
            return 0
        current = self.files.max_offset // CQ_ENTRY_SIZE
        phy, size, _ = _ENTRY.unpack_from(packed, 0)
        if first_queue_offset < current or phy + size <= self.max_physic_offset:
            entries = [
                (e[0], e[1], e[2], first_queue_offset + i) for i, e in enumerate(_ENTRY.iter_unpack(packed))
            ]
            return self.put_entries(entries)
        if not self.files.files:
            self._create_first(first_queue_offset)
        elif first_queue_offset > current:
            self._fill_blanks(current, first_queue_offset)
        view = memoryview(packed)
        done = 0
        while done < count:
            f = self.files.last_file_for_append((first_queue_offset + done) * CQ_ENTRY_SIZE)
            n = min((f.file_size - f.wrote_position) // CQ_ENTRY_SIZE, count - done)
            start = f.wrote_position
            f.mm[start : start + n * CQ_ENTRY_SIZE] = view[done * CQ_ENTRY_SIZE : (done + n) * CQ_ENTRY_SIZE]
            f.wrote_position = start + n * CQ_ENTRY_SIZE
            done += n
        phy, size, _ = _ENTRY.unpack_from(packed, (count - 1) * CQ_ENTRY_SIZE)
        self.max_physic_offset = phy + size
        return count

    def _create_first(self, queue_offset: int) -> None:
        pos = queue_offset * CQ_ENTRY_SIZE
        f = self.files.create_file(pos)
        if pos > f.file_from_offset:
            # Pre-blank: entries before a non-zero start, so logical offsets still map to positions.
            count = (pos - f.file_from_offset) // CQ_ENTRY_SIZE
            f.write(0, _BLANK_ENTRY * count)
            f.wrote_position = pos - f.file_from_offset
        self.min_logic_offset = pos
        self.files.flushed_where = f.file_from_offset

    def _fill_blanks(self, start: int, end: int) -> None:
        offset = start
        while offset < end:
            f = self.files.last_file_for_append(offset * CQ_ENTRY_SIZE)
            room = (f.file_size - f.wrote_position) // CQ_ENTRY_SIZE
            count = min(room, end - offset)
            f.write(f.wrote_position, _BLANK_ENTRY * count)
            f.wrote_position += count * CQ_ENTRY_SIZE
            offset += count

    def flush(self, least_pages: int) -> bool:
        return self.files.flush(least_pages)

    # ---- recovery -------------------------------------------------------------------------------
    def load(self) -> None:
        self.files.load()

    def recover(self) -> int:
        """Set write positions to the end of the valid entries (fact sheet 6.7 step 3).

        Entries end at the first invalid one (zeros: the end of what was written). An entry pointing
        before the end of the previous one's record is damage: the queue is cut at the earlier of the
        two and the commit-log offset to rebuild it from is returned (else -1)."""
        files = self.files.files
        if not files:
            return -1
        index = max(0, len(files) - 3)
        first = process_offset = files[index].file_from_offset
        max_phy = -1
        damaged = ""
        overlap = False
        while index < len(files):
            f = files[index]
            view = memoryview(f.mm)
            pos = 0
            complete = True
            try:
                # iter_unpack keeps the per-entry loop in C as far as possible (300,000 entries a file).
                for phy, size, tags in _ENTRY.iter_unpack(view):
                    if phy < 0 or size <= 0:
                        complete = False
                        if phy or size or tags:
                            damaged = f"entry ({phy}, {size}, {tags}) is not valid"
                        break
                    if size != PRE_BLANK_SIZE:
                        if phy < max_phy:
                            complete, overlap = False, True
                            damaged = f"entry ({phy}, {size}) overlaps the previous one's record"
                            break
                        max_phy = phy + size
                    pos += CQ_ENTRY_SIZE
            finally:
                view.release()
            process_offset = f.file_from_offset + pos
            if not complete:
                break
            index += 1
        if overlap:
            # Either of the two may be the damaged one: the earlier goes too.
            process_offset = self._previous_real(process_offset, first)
            max_phy = self._previous_end(process_offset, first)
        self.max_physic_offset = max_phy
        self.files.truncate_dirty_files(process_offset)
        self.files.set_all_full_except_last()
        if not damaged:
            return -1
        log.error(
            "consume queue %s damaged at byte %d (entry %d): %s; rebuilt from the commit log",
            self.directory,
            process_offset,
            process_offset // CQ_ENTRY_SIZE,
            damaged,
        )
        return max(0, max_phy)

    def _previous_real(self, pos: int, first: int) -> int:
        """Byte position of the last entry before `pos` that is not a blank (`first` if none)."""
        while pos > first:
            pos -= CQ_ENTRY_SIZE
            f = self.files.find(pos)
            if f is not None and _ENTRY.unpack_from(f.mm, pos - f.file_from_offset)[1] != PRE_BLANK_SIZE:
                return pos
        return first

    def _previous_end(self, pos: int, first: int) -> int:
        """End of the record of the last real entry before byte `pos` (-1 if none)."""
        before = self._previous_real(pos, first)
        f = self.files.find(before)
        if before == pos or f is None:
            return -1
        phy, size, _ = _ENTRY.unpack_from(f.mm, before - f.file_from_offset)
        return -1 if size == PRE_BLANK_SIZE else int(phy + size)

    def blank_entries(self, start: int, end: int) -> int:
        """Turn the entries pointing into commit-log bytes [start, end) (a damaged record) into blanks
        that keep their offset, so pulls skip them and searches by offset still work; returns how many."""
        i = self.first_index_at_or_after(start)
        blanked = 0
        while i < self.max_offset:
            pos = i * CQ_ENTRY_SIZE
            f = self.files.find(pos)
            if f is None:
                break
            phy, size, _ = _ENTRY.unpack_from(f.mm, pos - f.file_from_offset)
            if phy >= end:
                break
            if size != PRE_BLANK_SIZE:
                _ENTRY.pack_into(f.mm, pos - f.file_from_offset, phy, PRE_BLANK_SIZE, 0)
                blanked += 1
            i += 1
        return blanked

    def first_index_at_or_after(self, physical_offset: int) -> int:
        """Logical offset of the first real entry whose commit log offset is >= `physical_offset`."""
        lo = self.files.min_offset // CQ_ENTRY_SIZE
        hi = self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            pos = mid * CQ_ENTRY_SIZE
            f = self.files.find(pos)
            assert f is not None
            phy, size, _ = _ENTRY.unpack_from(f.mm, pos - f.file_from_offset)
            if phy < physical_offset or (size == PRE_BLANK_SIZE and phy == 0):
                lo = mid + 1
            else:
                hi = mid
        return lo

    def truncate_dirty_logic_files(self, physical_offset: int) -> None:
        """Remove every entry pointing at or beyond `physical_offset` (the log was cut there)."""
        cut = self.first_index_at_or_after(physical_offset)
        if cut >= self.max_offset:
            return
        pos = cut * CQ_ENTRY_SIZE
        self.files.truncate_dirty_files(pos)
        self.files.set_all_full_except_last()
        last = self.entry(cut - 1) if cut > self.min_offset else None
        self.max_physic_offset = last[0] + last[1] if last and last[1] != PRE_BLANK_SIZE else -1
        if self.files.files and self.min_logic_offset > pos:
            self.min_logic_offset = pos

    def correct_min_offset(self, physical_min_offset: int) -> None:
        """Move the min offset to the first entry still in the commit log (fact sheet 6.7 step 7)."""
        if not self.files.files:
            return
        first = self.first_index_at_or_after(physical_min_offset)
        self.min_logic_offset = max(self.min_logic_offset, first * CQ_ENTRY_SIZE)

    def delete_expired_files(self, physical_min_offset: int) -> int:
        """Delete leading files whose last entry points below the commit log's min offset."""

        def expired(f: MappedFile) -> bool:
            if f.wrote_position < CQ_ENTRY_SIZE:
                return False
            phy, size, _ = _ENTRY.unpack_from(f.mm, f.wrote_position - CQ_ENTRY_SIZE)
            return phy + (0 if size == PRE_BLANK_SIZE else size) <= physical_min_offset and f.is_full

        deleted = self.files.delete_first_files(expired, 1 << 30)
        self.correct_min_offset(physical_min_offset)
        return deleted

    def destroy(self) -> None:
        self.destroyed = True
        self.files.delete_all()
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        try:
            os.rmdir(self.directory)
        except OSError:
            pass

    def close(self) -> None:
        self.files.close()
