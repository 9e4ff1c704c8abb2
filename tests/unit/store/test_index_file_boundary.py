"""A message whose keys straddle two index files keeps every key through a crash recovery.

With two keys per message (UNIQ_KEY + KEYS) and an index file of 59 usable entries, message 29 puts its
first key in the first file and its second key in the next one. After a crash the second file is newer
than the checkpoint and is dropped; re-dispatch must index message 29 again (RocketMQ skips only offsets
strictly below the kept file's endPhyOffset), and a query must not report its offset twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.message.codec import decode_records
from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import encode_properties
from orbitmq.store import MessageStore, StoreConfig, StoreMessage


def _store(root: Path, clock: FakeClock, pool: bool) -> MessageStore:
    config = StoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=24 * 1024,
        mapped_file_size_consume_queue=800,
        max_hash_slot_num=16,
        max_index_num=60,
        message_index_safe=True,
        transient_store_pool_enable=pool,
        transient_store_pool_size=2,
    )
    store = MessageStore(config, clock=clock)
    store.load()
    store.start()
    return store


def _offsets(store: MessageStore, key: str) -> list[int]:
    found = store.query_message("SM", key, 64, 0, 1 << 62)
    return [m.commit_log_offset for m in decode_records(b"".join(found.buffers))]


@pytest.mark.parametrize("pool", [False, True])
def test_keys_straddling_index_files_survive_a_crash(tmp_path: Path, pool: bool) -> None:
    clock = FakeClock()
    store = _store(tmp_path, clock, pool)
    offsets: list[int] = []
    for n in range(31):
        props = encode_properties({"KEYS": "alpha", "UNIQ_KEY": f"U{n:08d}"})
        result = store.put_message(StoreMessage("SM", 0, 0, b"", props, 0, 1, pack_host("10.1.1.1", 9)))
        assert result.ok
        offsets.append(result.wrote_offset)
        if n % 6 == 5:
            clock.advance(0.4)
    store.shutdown()
    store = _store(tmp_path, clock, pool)
    assert sorted(_offsets(store, "alpha")) == offsets
    store.abort()  # crash right after a clean start: the newer index file is dropped and rebuilt
    store = _store(tmp_path, clock, pool)
    try:
        assert sorted(_offsets(store, "alpha")) == offsets
        assert _offsets(store, "U00000029") == [offsets[29]]  # re-indexed, reported once
    finally:
        store.shutdown()
