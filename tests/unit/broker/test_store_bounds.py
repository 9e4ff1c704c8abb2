"""The store's in-memory bounds as broker.conf keys (`recordTailCacheMaxEntries`, `indexDeferMaxEntries`,
`indexDeferMillis`, `indexTopicPrefixCacheMaxEntries`, `validNameCacheMaxEntries`): each value reaches
the running store, so a test fails if the constant were used."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker.app import BrokerApp
from orbitmq.broker.config import BrokerConfig
from orbitmq.message import hashing, record_layout, validation
from orbitmq.message.property_string import encode_properties
from orbitmq.store.store_message import StoreMessage

from .conftest import small_broker_properties

BORN_HOST = bytes([127, 0, 0, 1, 0, 0, 0x27, 0x10])


def _message(keys: str, topic: str = "BoundsTopic") -> StoreMessage:
    return StoreMessage(
        topic=topic,
        queue_id=0,
        flag=0,
        body=b"x",
        properties=encode_properties({"KEYS": keys}),
        sys_flag=0,
        born_timestamp=1,
        born_host=BORN_HOST,
    )


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[BrokerApp]:
    config = BrokerConfig.from_properties(
        small_broker_properties(
            tmp_path,
            recordTailCacheMaxEntries="3",
            tagsCodeCacheMaxEntries="2",
            indexDeferMaxEntries="4",
            indexDeferMillis="60000",
            indexTopicPrefixCacheMaxEntries="2",
            validNameCacheMaxEntries="3",
        )
    )
    app = BrokerApp(config)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()
        record_layout.set_tail_cache_max(record_layout.DEFAULT_TAIL_CACHE_MAX)  # process-wide
        hashing.set_tags_code_cache_max(hashing.DEFAULT_TAGS_CODE_CACHE_MAX)
        validation.set_valid_names_max(validation.DEFAULT_VALID_NAMES_MAX)


async def test_the_store_bounds_reach_the_running_store(broker: BrokerApp) -> None:
    store = broker.store
    # indexDeferMaxEntries=4: the 4th deferred key-index entry writes all four at once (the 60 s timer
    # has not fired); with the built-in 256 they would all still be pending.
    for i in range(3):
        store.put_message(_message(f"k{i}"))
    assert len(store.dispatcher.index_pending) == 3
    store.put_message(_message("k3"))
    assert store.dispatcher.index_pending == []
    # indexDeferMillis=60000: the timer the broker schedules is a minute away, not 10 ms.
    loop = asyncio.get_running_loop()
    assert store.dispatcher.defer_index is not None
    handle = store.dispatcher.defer_index()
    assert isinstance(handle, asyncio.TimerHandle)
    handle.cancel()
    assert handle.when() - loop.time() > 30
    # recordTailCacheMaxEntries=3: records of five (topic, properties) lengths keep at most 3 layouts.
    for i in range(5):
        store.put_message(_message("k" * (10 + i)))
    assert 1 <= record_layout.tail_cache_size() <= 3
    # tagsCodeCacheMaxEntries=2: five distinct tags keep at most 2 codes.
    for i in range(5):
        assert hashing.tags_code(f"BoundsTag{i}") == hashing.java_string_hash(f"BoundsTag{i}")
    assert 1 <= hashing.tags_code_cache_size() <= 2
    # indexTopicPrefixCacheMaxEntries=2: keyed messages of five topics keep at most 2 prefix hashes.
    key_index = store.key_index
    assert key_index is not None
    for i in range(5):
        store.put_message(_message("k", topic=f"BoundsTopic{i}"))
    store.flush_index()
    assert 1 <= len(key_index._prefixes) <= 2
    # validNameCacheMaxEntries=3: five distinct valid topic names keep at most 3 in the cache.
    for i in range(5):
        assert validation.topic_problem(f"ValidName{i}") is None
    assert 1 <= len(validation.valid_topics) <= 3


def test_store_bounds_are_refused_below_their_least_value() -> None:
    for key, value in (
        ("recordTailCacheMaxEntries", "0"),
        ("tagsCodeCacheMaxEntries", "0"),
        ("indexDeferMaxEntries", "0"),
        ("indexDeferMillis", "-1"),
        ("indexTopicPrefixCacheMaxEntries", "0"),
        ("validNameCacheMaxEntries", "0"),
    ):
        with pytest.raises(ValueError, match=key):
            BrokerApp(BrokerConfig.from_properties({key: value}))
