"""Helpers for store tests: small segment sizes so rolling, blank records and truncation happen in every
run, and messages built the way the broker hands them to the store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.message.batch import BatchEntry
from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import encode_properties
from orbitmq.store import MessageStore, StoreBatch, StoreConfig, StoreMessage

BORN_HOST = pack_host("10.0.0.7", 50000)


def small_config(root: Path, **overrides: Any) -> StoreConfig:
    config = StoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=300 * 20,
        max_hash_slot_num=64,
        max_index_num=200,
        max_message_size=16 * 1024,
    )
    for name, value in overrides.items():
        setattr(config, name, value)
    return config


def make_message(
    topic: str = "TopicTest",
    queue_id: int = 0,
    body: bytes = b"hello",
    *,
    tags: str | None = None,
    keys: str | None = None,
    uniq: str | None = None,
    sys_flag: int = 0,
    extra: dict[str, str] | None = None,
    born: int = 1_700_000_000_000,
) -> StoreMessage:
    props: dict[str, str] = {}
    if tags:
        props["TAGS"] = tags
    if keys:
        props["KEYS"] = keys
    if uniq:
        props["UNIQ_KEY"] = uniq
    props.update(extra or {})
    return StoreMessage(
        topic=topic,
        queue_id=queue_id,
        flag=0,
        body=body,
        properties=encode_properties(props),
        sys_flag=sys_flag,
        born_timestamp=born,
        born_host=BORN_HOST,
    )


def make_batch(*bodies: bytes, keys: tuple[str, ...] = (), queue_id: int = 0) -> StoreBatch:
    """A batch of `bodies` to TopicTest as the broker hands it to the store (the i-th with KEYS keys[i])."""
    entries = [
        BatchEntry(0, memoryview(body), encode_properties({"KEYS": keys[i]} if i < len(keys) else {}))
        for i, body in enumerate(bodies)
    ]
    return StoreBatch(
        topic="TopicTest",
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1,
        born_host=BORN_HOST,
        entries=entries,
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[MessageStore]:
    s = MessageStore(small_config(tmp_path / "store"), clock=clock)
    s.load()
    s.start()
    yield s
    s.shutdown()
