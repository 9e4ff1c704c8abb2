"""KeyIndex (RocketMQ's IndexService): the list of index files, key insertion and key queries.

Keys indexed per message (fact sheet 6.5): the UNIQ_KEY and every non-empty space-separated KEYS token,
each as `<topic>#<key>`. ROLLBACK-type messages are not indexed; a record below the last file's
endPhyOffset is already indexed and skipped (so re-dispatch after recovery is harmless).

A full file is handed to the flusher (`take_full_files`) so its fdatasync never runs on the caller's
thread; once it is durable the checkpoint's indexMsgTimestamp moves to its endTimestamp.
This module knows nothing of records; the dispatcher hands it keys.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from operator import mul
from typing import TYPE_CHECKING, Final

from orbitmq.common.clock import Clock
from orbitmq.message.hashing import hash_powers, java_string_hash
from orbitmq.store.disk_space import DiskFullError
from orbitmq.store.index_file import IndexFile

if TYPE_CHECKING:
    # mypyc's native 64-bit int (a plain int to the interpreter: only annotations name it, and they are
    # never evaluated at run time, so mypy_extensions is not a run-time dependency).
    from mypy_extensions import i64

log: Final = logging.getLogger(__name__)
_NO_ROOM_RETRY: Final = 10  # s between attempts at an index file the disk had no room for

_MASK32: Final = 0xFFFFFFFF
_POW31: Final = [pow(31, n, 1 << 32) for n in range(257)]


def prefix_hash(topic: str) -> int:
    """Java hash of `<topic>#` as an unsigned 32-bit value (the start of every key hash of the topic)."""
    return java_string_hash(topic + "#") & _MASK32


# Compiled (mypyc), a byte loop of shifts and adds is native arithmetic (a `* 31` of a 32-bit value leaves
# mypyc's fast path); interpreted, one C-level map/sum pass over the bytes is faster than a Python loop.
_COMPILED: Final = not __file__.endswith(".py")


def key_hash_with_prefix(prefix: int, key: str) -> int:
    """`index_key_hash(topic + "#" + key)` from the topic's `prefix_hash`, hashing only `key`.

    Java's hash is a polynomial in 31, so hash(a + b) = hash(a) * 31**len(b) + hash(b) (mod 2**32),
    with lengths in UTF-16 units (an ASCII byte is one unit). This runs for every key of every indexed
    message.
    """
    n = len(key)
    if key.isascii() and n < len(_POW31):
        data = key.encode()
        if _COMPILED:
            h = _ascii_hash(prefix, data)
        else:
            h = (prefix * _POW31[n] + sum(map(mul, data, hash_powers(n)))) & _MASK32
    else:
        units = n if key.isascii() else len(key.encode("utf-16-le", "surrogatepass")) // 2
        power = _POW31[units] if units < len(_POW31) else pow(31, units, 1 << 32)
        h = (prefix * power + java_string_hash(key)) & _MASK32
    if h & 0x80000000:
        h -= 0x100000000
    return 0 if h == -0x80000000 else abs(h)


def _ascii_hash(prefix: int, data: bytes) -> int:
    # i64 locals: compiled, each step is a machine add and shift (no tagged-int overflow checks)
    h: i64 = prefix
    for i in range(len(data)):
        h = ((h << 5) - h + data[i]) & 0xFFFFFFFF
    return h


def index_file_name(now_ms: int) -> str:
    """`yyyyMMddHHmmssSSS` in local time, as RocketMQ names index files."""
    seconds, millis = divmod(now_ms, 1000)
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds)) + f"{millis:03d}"


DEFAULT_PREFIX_CACHE_MAX: Final = 10000


class KeyIndex:
    def __init__(self, directory: str, hash_slot_num: int, index_num: int, clock: Clock) -> None:
        self.directory = directory
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.clock = clock
        self.files: list[IndexFile] = []
        self._full_unflushed: list[IndexFile] = []
        self._lock = threading.Lock()  # files list: the flusher thread reads it
        self._prefixes: dict[str, int] = {}
        # Bound of the per-topic prefix-hash cache: cleared when full (broker.conf
        # `indexTopicPrefixCacheMaxEntries`; the broker sets it at start).
        self.prefix_cache_max = DEFAULT_PREFIX_CACHE_MAX
        # After a new file found no room on the disk: no other attempt (and no log line) before this
        # monotonic time, instead of one per message.
        self._no_room_until = 0.0

    def load(self, last_exit_ok: bool, checkpoint_index_timestamp: int) -> int:
        """Open the index files; after a crash drop those not covered by the checkpoint (rebuilt later).

        Returns the lowest beginPhyOffset of a dropped file (where rebuilding must start), or -1.
        """
        lowest = -1
        if not os.path.isdir(self.directory):
            return lowest
        for name in sorted(n for n in os.listdir(self.directory) if n.isdigit()):
            path = os.path.join(self.directory, name)
            if os.path.getsize(path) == 0:
                # Created but not yet sized when a crash came (see MappedFile): it indexes nothing.
                log.warning("removing %s: empty, its creation was interrupted by a crash", path)
                os.unlink(path)
                continue
            f = IndexFile(
                os.path.join(self.directory, name), self.hash_slot_num, self.index_num, create=False
            )
            if not last_exit_ok and f.end_timestamp > checkpoint_index_timestamp:
                begin = f.begin_phy_offset
                lowest = begin if lowest < 0 else min(lowest, begin)
                f.destroy()
                continue
            self.files.append(f)
        return lowest

    def drop_files_beyond(self, physical_offset: int) -> int:
        """Delete files that index records at or beyond `physical_offset` (the log was cut before them).

        Returns the lowest begin offset among the dropped files (where re-dispatch must start to rebuild
        them), or -1 if none was dropped.
        """
        lowest = -1
        with self._lock:
            while self.files and self.files[-1].end_phy_offset >= physical_offset:
                f = self.files.pop()
                lowest = f.begin_phy_offset if lowest < 0 else min(lowest, f.begin_phy_offset)
                f.destroy()
        return lowest

    @property
    def end_phy_offset(self) -> int:
        return self.files[-1].end_phy_offset if self.files else 0

    def _new_file(self) -> IndexFile:
        os.makedirs(self.directory, exist_ok=True)
        now = self.clock.now_ms()
        while True:
            path = os.path.join(self.directory, index_file_name(now))
            if not os.path.exists(path):
                break
            now += 1
        f = IndexFile(path, self.hash_slot_num, self.index_num, create=True)
        if self.files:
            prev = self.files[-1]
            # A new file starts where the previous one ended (RocketMQ's IndexFile constructor).
            if prev.end_phy_offset > 0:
                f.begin_phy_offset = f.end_phy_offset = prev.end_phy_offset
            if prev.end_timestamp > 0:
                f.begin_timestamp = f.end_timestamp = prev.end_timestamp
            f.write_header()
        return f

    def _file_with_room(self) -> IndexFile:
        """The newest file, or a new one when there is none yet or it is full (the full one then waits in
        `_full_unflushed` for the flusher)."""
        files = self.files
        last = files[-1] if files else None
        if last is not None and last.index_count < last.index_num:
            return last
        if self._no_room_until and time.monotonic() < self._no_room_until:
            raise DiskFullError("no room for a new index file")
        try:
            new = self._new_file()
        except DiskFullError as exc:
            self._no_room_until = time.monotonic() + _NO_ROOM_RETRY
            log.error("message keys not indexed for %d s: %s", _NO_ROOM_RETRY, exc)
            raise
        self._no_room_until = 0.0
        with self._lock:
            if last is not None:
                self._full_unflushed.append(last)
            files.append(new)
        return new

    def put(self, topic: str, keys: list[str], physical_offset: int, store_timestamp: int) -> None:
        """Index every key of one message (already filtered: not ROLLBACK, not yet indexed)."""
        prefix = self.prefix_for(topic)
        try:
            for key in keys:
                self._file_with_room().put_hash(
                    key_hash_with_prefix(prefix, key), physical_offset, store_timestamp
                )
        except DiskFullError:
            pass  # (logged by _file_with_room: stored and consumable, these keys are not indexed)

    def put_batch(self, items: list[tuple[str, list[str], int, int]]) -> None:
        """`put` for many messages: (topic, keys, commit log offset, store timestamp) each, written with
        one `IndexFile.put_hashes` per file instead of one call per key (recovery, batches, slaves)."""
        entries: list[tuple[int, int, int]] = []
        for topic, keys, physical_offset, store_timestamp in items:
            prefix = self.prefix_for(topic)
            for key in keys:
                entries.append((key_hash_with_prefix(prefix, key), physical_offset, store_timestamp))
        self.put_hashes(entries)

    def prefix_for(self, topic: str) -> int:
        """`prefix_hash(topic)`, cached per topic."""
        prefixes = self._prefixes
        prefix = prefixes.get(topic)
        if prefix is None:
            if len(prefixes) >= self.prefix_cache_max:
                prefixes.clear()
            prefix = prefixes[topic] = prefix_hash(topic)
        return prefix

    def put_hashes(self, entries: list[tuple[int, int, int]]) -> None:
        """Write (key hash, commit log offset, store timestamp) entries, rolling to new files as they fill."""
        done = 0
        try:
            while done < len(entries):
                done = self._file_with_room().put_hashes(entries, done)
        except DiskFullError:
            pass  # (logged by _file_with_room: stored and consumable, these keys are not indexed)

    def put_run(self, hashes: list[int], offsets: list[int], store_timestamp: int) -> None:
        """`put_hashes` for keys of one store timestamp as parallel lists (the batch path)."""
        done = 0
        try:
            while done < len(hashes):
                done = self._file_with_room().put_run(hashes, offsets, store_timestamp, done)
        except DiskFullError:
            pass  # (logged by _file_with_room: stored and consumable, these keys are not indexed)

    def take_full_files(self) -> list[IndexFile]:
        with self._lock:
            taken, self._full_unflushed = self._full_unflushed, []
        return taken

    def flush_all(self) -> None:
        with self._lock:
            files = list(self.files)
        for f in files:
            if not f.flushed:
                f.flush()

    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """Commit log offsets of messages with `key`, newest file first (fact sheet 6.5)."""
        out: list[int] = []
        with self._lock:
            files = list(self.files)
        full_key = f"{topic}#{key}"
        for f in reversed(files):
            if f.time_matched(begin, end):
                f.select_offsets(full_key, max_num, begin, end, out)
            if f.begin_timestamp < begin or len(out) >= max_num:
                break
        # A key re-indexed by recovery (the message at a kept file's end offset) can appear twice.
        return list(dict.fromkeys(out))

    def last_update(self) -> tuple[int, int]:
        """(endTimestamp, endPhyOffset) of the newest file, as QueryMessageResult reports them."""
        if not self.files:
            return 0, 0
        last = self.files[-1]
        return last.end_timestamp, last.end_phy_offset

    def delete_expired_files(self, physical_min_offset: int) -> int:
        """Delete files (never the newest) whose every entry points below the commit log's min offset."""
        deleted = 0
        with self._lock:
            while len(self.files) > 1 and self.files[0].end_phy_offset < physical_min_offset:
                f = self.files.pop(0)
                if f in self._full_unflushed:
                    self._full_unflushed.remove(f)
                f.destroy()
                deleted += 1
        return deleted

    def destroy(self) -> None:
        with self._lock:
            for f in self.files:
                f.destroy()
            self.files = []
            self._full_unflushed = []

    def close(self) -> None:
        with self._lock:
            for f in self.files:
                f.close()
