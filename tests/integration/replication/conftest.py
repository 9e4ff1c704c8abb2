"""Helpers for the replication tests: real MessageStores with small segments, messages built the way the
broker hands them to the store, and polling with a deadline (replication is asynchronous)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import encode_properties
from orbitmq.store import MessageStore, StoreConfig, StoreMessage

SEGMENT = 64 * 1024


def open_store(root: Path, *, role: str = "ASYNC_MASTER", port: int = 10911) -> MessageStore:
    config = StoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=1000 * 20,
        max_hash_slot_num=256,
        max_index_num=4000,
        broker_role=role,
    )
    store = MessageStore(config, store_host=("127.0.0.1", port))
    store.load()
    store.start()
    return store


def message(
    i: int, *, topic: str = "Replicated", size: int = 1000, queue_id: int | None = None
) -> StoreMessage:
    body = (b"%08d" % i) * (size // 8)
    props = {"TAGS": f"t{i % 3}", "KEYS": f"k{i}", "UNIQ_KEY": f"{i:032X}"}
    return StoreMessage(
        topic=topic,
        queue_id=i % 2 if queue_id is None else queue_id,
        flag=0,
        body=body,
        properties=encode_properties(props),
        sys_flag=0,
        born_timestamp=1_700_000_000_000 + i,
        born_host=pack_host("10.0.0.1", 5000),
    )


def put_many(store: MessageStore, start: int, count: int, **kw: object) -> int:
    """Append messages start..start+count-1; returns the end offset of the last one."""
    end = 0
    for i in range(start, start + count):
        result = store.put_message(message(i, **kw))  # type: ignore[arg-type]
        assert result.ok, result.status
        end = result.end_offset
    return end


def commit_log_bytes(store: MessageStore, start: int = 0) -> bytes:
    """The written log from `start` to the end, read through the store."""
    out = bytearray()
    offset = start
    while offset < store.get_max_phy_offset():
        view = store.get_commit_log_data(offset, 1 << 20)
        assert view is not None, offset
        out += view
        offset += len(view)
        view.release()
    return bytes(out)


def segment_files(root: Path) -> dict[str, bytes]:
    directory = root / "commitlog"
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


async def eventually(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)
