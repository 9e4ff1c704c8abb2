"""IndexFile: one hash index of message keys to commit log offsets (fact sheet 6.5).

Layout, big-endian::

    header (40 bytes)
      0 beginTimestamp (q)  8 endTimestamp (q)  16 beginPhyOffset (q)  24 endPhyOffset (q)
      32 hashSlotCount (i)  36 indexCount (i, starts at 1: entry 0 is never used)
    slot table: hash_slot_num x int at 40 -- index of the newest entry whose key hashes to the slot, 0 = empty
    entries: index_num x 20 bytes at 40 + hash_slot_num*4, entry i at + i*20
      0 keyHash (i)  4 commit log offset (q)  12 timeDiff seconds (i)  16 previous entry index (i)

The file is named by its creation time (`yyyyMMddHHmmssSSS`, local time). Keys are `<topic>#<key>` hashed
with Java's String.hashCode (abs, MIN_VALUE -> 0). This module knows nothing of messages.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from typing import Final

from orbitmq.common.errors import StoreError
from orbitmq.message.hashing import index_key_hash
from orbitmq.store.disk_space import allocate
from orbitmq.store.mapped_file import close_mapping, remove_file

# Final: compiled code reads these as constants, not from the module's dict on every key.
INDEX_HEADER_SIZE: Final = 40
HASH_SLOT_SIZE: Final = 4
INDEX_ENTRY_SIZE: Final = 20
_HEADER: Final = struct.Struct(">qqqqii")
_SLOT: Final = struct.Struct(">i")
_ENTRY: Final = struct.Struct(">iqii")
_INT_MAX: Final = 0x7FFFFFFF


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE


class IndexFile:
    __slots__ = (
        "_entries_at",
        "begin_phy_offset",
        "begin_timestamp",
        "end_phy_offset",
        "end_timestamp",
        "fd",
        "flushed",
        "hash_slot_count",
        "hash_slot_num",
        "index_count",
        "index_num",
        "mm",
        "path",
    )

    def __init__(self, path: str, hash_slot_num: int, index_num: int, *, create: bool) -> None:
        self.path = path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        size = index_file_size(hash_slot_num, index_num)
        self.fd = os.open(path, os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0), 0o644)
        try:
            if create:
                os.ftruncate(self.fd, size)
            elif os.fstat(self.fd).st_size != size:
                raise StoreError(
                    f"index file {path} is not {size} bytes (maxHashSlotNum/maxIndexNum differ?)"
                )
            allocate(self.fd, size, path, new=create)  # every page backed before it is mapped (disk_space.py)
            self.mm = mmap.mmap(self.fd, size, access=mmap.ACCESS_WRITE)
        except BaseException:
            os.close(self.fd)
            if create:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        self._entries_at = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
        header: tuple[int, int, int, int, int, int] = _HEADER.unpack_from(self.mm, 0)
        self.begin_timestamp: int = header[0]
        self.end_timestamp: int = header[1]
        self.begin_phy_offset: int = header[2]
        self.end_phy_offset: int = header[3]
        self.hash_slot_count: int = header[4]
        self.index_count: int = max(1, header[5])
        self.flushed: bool = not create

    @property
    def is_full(self) -> bool:
        return self.index_count >= self.index_num

    def write_header(self) -> None:
        _HEADER.pack_into(
            self.mm,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    def put_hash(self, key_hash: int, physical_offset: int, store_timestamp: int) -> bool:
        """Index a key by its index hash (see `index_key_hash`); False if the file is full."""
        if self.index_count >= self.index_num:
            return False
        slot_pos = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        mm = self.mm
        (old,) = _SLOT.unpack_from(mm, slot_pos)
        if old <= 0 or old > self.index_count:
            old = 0
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            time_diff = min(max((store_timestamp - self.begin_timestamp) // 1000, 0), _INT_MAX)
        index = self.index_count
        _ENTRY.pack_into(
            mm, self._entries_at + index * INDEX_ENTRY_SIZE, key_hash, physical_offset, time_diff, old
        )
        _SLOT.pack_into(mm, slot_pos, index)
        if index <= 1:
            self.begin_phy_offset = physical_offset
            self.begin_timestamp = store_timestamp
        if old == 0:
            self.hash_slot_count += 1
        self.index_count = index + 1
        self.end_phy_offset = physical_offset
        self.end_timestamp = store_timestamp
        # The header is written when the file fills, is flushed or closed (not per key): after a crash
        # only files covered by the checkpoint are kept, and those were full and flushed.
        if index + 1 >= self.index_num:
            self.write_header()
        self.flushed = False
        return True

    def put_hashes(self, entries: list[tuple[int, int, int]], start: int = 0) -> int:
        """`put_hash` for each (key hash, commit log offset, store timestamp) of `entries[start:]`, in one
        loop; returns the index of the first entry not written (len(entries) unless the file filled)."""
        mm = self.mm
        slot_struct = _SLOT
        entry_pack = _ENTRY.pack_into
        slot_num = self.hash_slot_num
        entries_at = self._entries_at
        index_num = self.index_num
        index = self.index_count
        n = len(entries)
        i = start
        old: int  # (declared: compared natively, not as the untyped value unpack_from returns)
        while i < n and index < index_num:
            key_hash, physical_offset, store_timestamp = entries[i]
            slot_pos = INDEX_HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE
            (old,) = slot_struct.unpack_from(mm, slot_pos)
            if old <= 0 or old > index:
                old = 0
                self.hash_slot_count += 1
            begin_timestamp = self.begin_timestamp
            if begin_timestamp <= 0:
                time_diff = 0
            else:
                time_diff = min(max((store_timestamp - begin_timestamp) // 1000, 0), _INT_MAX)
            entry_pack(mm, entries_at + index * INDEX_ENTRY_SIZE, key_hash, physical_offset, time_diff, old)
            slot_struct.pack_into(mm, slot_pos, index)
            if index <= 1:
                self.begin_phy_offset = physical_offset
                self.begin_timestamp = store_timestamp
            index += 1
            self.end_phy_offset = physical_offset
            self.end_timestamp = store_timestamp
            i += 1
        if i > start:
            self.index_count = index
            if index >= index_num:
                self.write_header()
            self.flushed = False
        return i

    def put_run(self, hashes: list[int], offsets: list[int], store_timestamp: int, start: int = 0) -> int:
        """`put_hashes` for keys that share one store timestamp (a batch), given as parallel lists of key
        hashes and commit log offsets: no tuple per key, the header fields set once. Returns the index of
        the first key not written (len(hashes) unless the file filled)."""
        mm = self.mm
        slot_unpack = _SLOT.unpack_from  # bound once: no method lookup per key
        slot_pack = _SLOT.pack_into
        entry_pack = _ENTRY.pack_into
        slot_num = self.hash_slot_num
        entries_at = self._entries_at
        index_num = self.index_num
        index = self.index_count
        n = len(hashes)
        i = start
        if i >= n or index >= index_num:
            return i
        begin_timestamp = self.begin_timestamp
        if index <= 1:  # the file's first entry sets its begin (as put_hash does)
            self.begin_phy_offset = offsets[i]
            self.begin_timestamp = store_timestamp
        if begin_timestamp <= 0:
            time_diff = 0
        else:
            time_diff = min(max((store_timestamp - begin_timestamp) // 1000, 0), _INT_MAX)
        new_slots = 0
        old: int  # (declared: compared natively, not as the untyped value unpack_from returns)
        while i < n and index < index_num:
            key_hash = hashes[i]
            slot_pos = INDEX_HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE
            (old,) = slot_unpack(mm, slot_pos)
            if old <= 0 or old > index:
                old = 0
                new_slots += 1
            entry_pack(mm, entries_at + index * INDEX_ENTRY_SIZE, key_hash, offsets[i], time_diff, old)
            slot_pack(mm, slot_pos, index)
            if index <= 1:
                time_diff = 0  # later entries: store_timestamp - begin (= store_timestamp) is 0
            index += 1
            i += 1
        self.hash_slot_count += new_slots
        self.index_count = index
        self.end_phy_offset = offsets[i - 1]
        self.end_timestamp = store_timestamp
        if index >= index_num:
            self.write_header()
        self.flushed = False
        return i

    def time_matched(self, begin: int, end: int) -> bool:
        return (
            (begin <= self.begin_timestamp <= end)
            or (begin <= self.end_timestamp <= end)
            or (self.begin_timestamp <= begin and end <= self.end_timestamp)
        )

    def select_offsets(self, key: str, max_num: int, begin: int, end: int, out: list[int]) -> None:
        """Append to `out` the offsets indexed under `key` with a store time in [begin, end], newest first."""
        key_hash = index_key_hash(key)
        slot_pos = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE
        mm = self.mm
        (index,) = _SLOT.unpack_from(mm, slot_pos)
        count = self.index_count
        if index <= 0 or index > count or count <= 1:
            return
        while len(out) < max_num:
            h, phy, time_diff, prev = _ENTRY.unpack_from(mm, self._entries_at + index * INDEX_ENTRY_SIZE)
            if time_diff < 0:
                break
            ts = self.begin_timestamp + time_diff * 1000
            if h == key_hash and begin <= ts <= end:
                out.append(phy)
            if prev <= 0 or prev > count or prev == index or ts < begin:
                break
            index = prev

    def flush(self) -> None:
        self.write_header()
        os.fdatasync(self.fd)
        self.flushed = True

    def close(self) -> None:
        if not self.mm.closed:
            self.write_header()
        close_mapping(self.mm, self.fd)

    def destroy(self) -> None:
        self.close()
        remove_file(self.path)
