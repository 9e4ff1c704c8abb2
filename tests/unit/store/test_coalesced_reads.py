"""get_messages(coalesce=True), what a pull reply is built from: adjacent records of one commit-log file
come back as one view, and the reply holds exactly the bytes, messages and offsets of the per-record
read (across queue interleaving, a segment end and a tag filter)."""

from __future__ import annotations

from collections.abc import Callable

from orbitmq.message.codec import decode_records
from orbitmq.message.hashing import java_string_hash
from orbitmq.store import GetMessageResult, MessageStore

from .conftest import make_message


def _both(
    store: MessageStore, queue_id: int, offset: int, max_count: int, flt: Callable[[int], bool] | None = None
) -> tuple[GetMessageResult, GetMessageResult]:
    plain = store.reads.get_messages("g", "TopicTest", queue_id, offset, max_count, flt)
    runs = store.reads.get_messages("g", "TopicTest", queue_id, offset, max_count, flt, coalesce=True)
    return plain, runs


def test_runs_hold_the_same_records_as_single_views(store: MessageStore) -> None:
    # Queue 0 gets runs of 3 adjacent records, queue 1 breaks them; 900-byte bodies cross 64 KiB segments.
    n = 0
    while store.get_max_phy_offset() < 100 * 1024:
        for _ in range(3):
            store.put_message(make_message(queue_id=0, body=bytes([n % 256]) * 900, tags=f"T{n % 2}"))
            n += 1
        store.put_message(make_message(queue_id=1, body=b"other"))
    offset = 0
    pulls = 0
    while True:
        plain, runs = _both(store, 0, offset, 32)
        if not plain.message_count:
            break
        assert (runs.status, runs.next_begin_offset, runs.message_count) == (
            plain.status, plain.next_begin_offset, plain.message_count,
        )  # fmt: skip
        assert runs.queue_offsets == plain.queue_offsets and runs.buffer_total_size == plain.buffer_total_size
        assert b"".join(runs.buffers) == b"".join(plain.buffers)
        assert len(plain.buffers) == plain.message_count
        assert len(runs.buffers) < plain.message_count  # runs of 3, not one view per record
        offset = plain.next_begin_offset
        pulls += 1
    assert offset == n and pulls > 2

    code = java_string_hash("T1")
    plain, runs = _both(store, 0, 0, 32, lambda c: c == code)
    assert runs.message_count == plain.message_count > 0
    assert b"".join(runs.buffers) == b"".join(plain.buffers)
    assert {m.tags for m in decode_records(b"".join(runs.buffers))} == {"T1"}
