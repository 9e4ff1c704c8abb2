"""The key index deferred off the put path (MessageStore.defer_index_to, as the broker runs it): queries,
batches, restarts and a crash still see every key, and the entries are written in one batch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from orbitmq.common.clock import FakeClock
from orbitmq.store import MessageStore

from .conftest import make_batch, make_message, small_config

ALL_TIME = 1 << 62


def _open(root: Path, clock: FakeClock) -> tuple[MessageStore, list[Callable[[], None]]]:
    store = MessageStore(small_config(root), clock=clock)
    store.load()
    store.start()
    scheduled: list[Callable[[], None]] = []  # a loop's call_soon that has not run yet
    store.defer_index_to(scheduled.append)
    return store, scheduled


def _found(store: MessageStore, key: str) -> int:
    return len(store.query_message("TopicTest", key, 100, 0, ALL_TIME).buffers)


def test_deferred_keys_are_written_once_per_iteration_and_queries_see_them(
    tmp_path: Path, clock: FakeClock
) -> None:
    store, scheduled = _open(tmp_path / "store", clock)
    try:
        for i in range(10):
            store.put_message(make_message(keys=f"k{i}", uniq=f"U{i}"))
        assert len(scheduled) == 1  # one callback for the whole iteration
        assert len(store.dispatcher.index_pending) == 10
        assert store.key_index is not None and store.key_index.end_phy_offset == 0  # nothing written yet
        assert _found(store, "k3") == 1  # a query writes the pending entries first
        assert store.dispatcher.index_pending == []
        store.put_message(make_message(keys="late"))
        scheduled[-1]()  # the loop runs the callback
        assert store.dispatcher.index_pending == [] and _found(store, "late") == 1
    finally:
        store.shutdown()


def test_a_batch_after_deferred_puts_keeps_log_order_and_shutdown_writes_the_rest(
    tmp_path: Path, clock: FakeClock
) -> None:
    root = tmp_path / "store"
    store, _ = _open(root, clock)
    store.put_message(make_message(keys="single"))
    store.put_messages(make_batch(b"b", b"b", keys=("inbatch", "two")))
    store.put_message(make_message(keys="last"))
    key_index = store.key_index
    assert key_index is not None
    # the batch (dispatched together) wrote the pending single's entry first, then its own
    assert len(key_index.query("TopicTest", "single", 10, 0, ALL_TIME)) == 1
    assert len(key_index.query("TopicTest", "two", 10, 0, ALL_TIME)) == 1
    store.shutdown()  # "last" is still pending here: shutdown writes it
    reopened = MessageStore(small_config(root), clock=clock)
    reopened.load()
    reopened.start()
    try:
        assert [_found(reopened, k) for k in ("single", "inbatch", "last")] == [1, 1, 1]
    finally:
        reopened.shutdown()


def test_keys_pending_at_a_crash_are_rebuilt_by_recovery(tmp_path: Path, clock: FakeClock) -> None:
    root = tmp_path / "store"
    store, _ = _open(root, clock)
    for i in range(5):
        store.put_message(make_message(keys=f"c{i}"))
    store.abort()  # the pending entries die with the process
    reopened = MessageStore(small_config(root), clock=clock)
    reopened.load()
    reopened.start()
    try:
        assert [_found(reopened, f"c{i}") for i in range(5)] == [1] * 5
    finally:
        reopened.shutdown()
