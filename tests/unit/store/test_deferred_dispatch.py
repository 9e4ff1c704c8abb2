"""A single put's dispatch deferred until the caller has answered its sender (put_message's
dispatch_later, as the broker runs it): the consume queues never lag the log where anyone can look --
every read and write of the store dispatches the deferred puts first, in log order -- and a store that
was not told the caller dispatches keeps dispatching at once."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common.clock import FakeClock
from orbitmq.message.codec import decode_records
from orbitmq.store import MessageStore

from .conftest import make_batch, make_message, small_config

ALL_TIME = 1 << 62


def _open(root: Path, clock: FakeClock, *, defer: bool = True) -> MessageStore:
    store = MessageStore(small_config(root), clock=clock)
    store.load()
    store.start()
    if defer:
        store.defer_dispatch_between_requests()
    return store


def _queue_length(store: MessageStore, queue_id: int = 0) -> int:
    """The consume queue as written, without a read of the store (which would dispatch first)."""
    cq = store.queues.find("TopicTest", queue_id)
    return cq.max_offset if cq is not None else 0


def test_the_put_is_dispatched_by_dispatch_deferred_and_its_listeners_hear_of_it_then(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = _open(tmp_path / "store", clock)
    heard: list[tuple[str, int, int]] = []
    store.add_arrival_listener(lambda topic, queue_id, end, tags: heard.append((topic, queue_id, end)))
    try:
        result = store.put_message(make_message(body=b"first"), dispatch_later=True)
        assert result.ok and result.queue_offset == 0
        assert _queue_length(store) == 0 and heard == []  # in the log, not in its queue yet
        store.dispatch_deferred()
        assert _queue_length(store) == 1 and heard == [("TopicTest", 0, 1)]
        store.dispatch_deferred()  # nothing left: nothing happens
        assert heard == [("TopicTest", 0, 1)]
    finally:
        store.shutdown()


def test_reads_and_writes_dispatch_deferred_puts_first_in_log_order(tmp_path: Path, clock: FakeClock) -> None:
    store = _open(tmp_path / "store", clock)
    try:
        store.put_message(make_message(body=b"a", keys="ka"), dispatch_later=True)
        assert store.get_max_offset_in_queue("TopicTest", 0) == 1  # a read: dispatched first
        store.put_message(make_message(body=b"b"), dispatch_later=True)
        store.put_message(make_message(body=b"c"), dispatch_later=True)  # a put: b's dispatch first
        assert _queue_length(store) == 2
        assert store.put_messages(make_batch(b"d", b"e")).queue_offset == 3  # c dispatched before the batch
        got = store.get_messages("g", "TopicTest", 0, 0, 32, None)
        msgs = decode_records(b"".join(got.buffers))
        assert [m.body for m in msgs] == [b"a", b"b", b"c", b"d", b"e"]
        assert [m.queue_offset for m in msgs] == [0, 1, 2, 3, 4]
        store.put_message(make_message(body=b"f", keys="kf"), dispatch_later=True)
        # a key query sees the deferred put's key (its index entry comes from its dispatch)
        assert len(store.query_message("TopicTest", "kf", 10, 0, ALL_TIME).buffers) == 1
        store.put_message(make_message(body=b"g"), dispatch_later=True)
        assert "TopicTest" in store.topics() and _queue_length(store) == 7
    finally:
        store.shutdown()


def test_shutdown_dispatches_deferred_puts_and_the_restart_is_clean(tmp_path: Path, clock: FakeClock) -> None:
    root = tmp_path / "store"
    store = _open(root, clock)
    store.put_message(make_message(body=b"last"), dispatch_later=True)
    store.shutdown()
    store = _open(root, clock)
    try:
        assert store.last_exit_ok  # dispatch had caught up: no crash recovery
        assert _queue_length(store) == 1
    finally:
        store.shutdown()


def test_without_the_callers_promise_a_put_is_dispatched_at_once(tmp_path: Path, clock: FakeClock) -> None:
    store = _open(tmp_path / "store", clock, defer=False)
    try:
        store.put_message(make_message(body=b"now"), dispatch_later=True)
        assert _queue_length(store) == 1
    finally:
        store.shutdown()
