"""The scanned batch path (store/batch_append.py) against the object path (CommitLog.put_batch).

Two stores get the same batches, one as decode_batch entries, one as a ScannedBatch: the results, the
commit-log bytes, the consume-queue entries, the key index and the arrival notifications must be equal,
across segment rolls and consume-queue file ends (small sizes), for properties with TAGS/KEYS/UNIQ_KEY
in the message's own text, the batch's text, both, empty values and trailing separators.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orbitmq.common.clock import FakeClock
from orbitmq.common.errors import ClientError
from orbitmq.message.batch import encode_batch
from orbitmq.message.batch_scan import decode_batch
from orbitmq.message.model import Message
from orbitmq.store import MessageStore, StoreBatch
from orbitmq.store.batch_append import scan_batch
from orbitmq.store.consume_queue import CQ_ENTRY

from .conftest import BORN_HOST, small_config

TOPIC = "BatchTopic"
_names = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "a", "WAIT"])
_values = st.sampled_from(["", "0", "x", "tag1", "k1 k2", " k3  ", "0A00", "é"])
_segments = st.lists(st.tuples(_names, _values), max_size=4).map(
    lambda items: "\x02".join(f"{n}\x01{v}" for n, v in items)
)
_texts = st.tuples(_segments, st.booleans()).map(lambda t: t[0] + ("\x02" if t[1] else ""))


def _raw_body(bodies: list[bytes], texts: list[str]) -> bytes:
    """A batch body whose properties texts are exactly `texts` (encode_batch goes through a dict)."""
    messages = [Message(TOPIC, b) for b in bodies]
    raw = bytearray(encode_batch(messages))
    entries = decode_batch(bytes(raw))
    out = bytearray()
    for entry, text in zip(entries, texts, strict=True):
        props = text.encode()
        body = bytes(entry.body)
        out += (22 + len(body) + len(props)).to_bytes(4, "big") + bytes(8)
        out += entry.flag.to_bytes(4, "big") + len(body).to_bytes(4, "big") + body
        out += len(props).to_bytes(2, "big") + props
    return bytes(out)


def _state(store: MessageStore, keys: set[str]) -> tuple[object, ...]:
    log = store.commit_log
    segments = [bytes(f.mm[: f.wrote_position]) for f in log.files.files]
    queues = []
    for queue_id in range(2):
        cq = store.queues.find(TOPIC, queue_id)
        if cq is None:
            queues.append(None)
            continue
        queues.append([list(CQ_ENTRY.iter_unpack(bytes(f.mm[: f.wrote_position]))) for f in cq.files.files])
    found = {
        k: sorted(bytes(b) for b in store.query_message(TOPIC, k, 64, 0, 2_000_000_000_000).buffers)
        for k in sorted(keys)
    }
    return segments, queues, found, store.dispatcher.reput_offset


def _result(r: object) -> tuple[object, ...]:
    return (
        getattr(r, "status", None),
        getattr(r, "remark", None),
        getattr(r, "wrote_offset", None),
        getattr(r, "queue_offset", None),
        getattr(r, "msg_num", None),
        getattr(r, "msg_id", None),
    )


batches = st.lists(
    st.tuples(
        st.lists(st.tuples(st.binary(min_size=1, max_size=3000), _texts), min_size=1, max_size=12),
        _texts,
        st.integers(0, 1),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(batches)
def test_the_scanned_path_writes_what_the_object_path_writes(
    plan: list[tuple[list[tuple[bytes, str]], str, int]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores = []
        notified: list[list[tuple[str, int, int, int]]] = []
        for name in ("objects", "scanned"):
            store = MessageStore(small_config(Path(tmp) / name), clock=FakeClock())
            store.load()
            store.start()
            seen: list[tuple[str, int, int, int]] = []
            store.dispatcher.listeners.append(lambda *a, seen=seen: seen.append(a))
            stores.append(store)
            notified.append(seen)
        keys: set[str] = set()
        try:
            for messages, batch_text, queue_id in plan:
                raw = _raw_body([b for b, _ in messages], [t for _, t in messages])
                for _, text in messages:
                    keys.update(v for seg in text.split("\x02") for v in seg.split("\x01")[1:2])
                by_objects = stores[0].put_messages(
                    StoreBatch(
                        TOPIC, queue_id, 0, 1_700_000_000_123, BORN_HOST, decode_batch(raw), batch_text
                    )
                )
                by_offsets = stores[1].put_messages(
                    StoreBatch(
                        TOPIC,
                        queue_id,
                        0,
                        1_700_000_000_123,
                        BORN_HOST,
                        (),
                        batch_text,
                        scanned=scan_batch(raw),
                    )
                )
                assert _result(by_offsets) == _result(by_objects)
            keys = {k for key in keys for k in key.split(" ") if k}
            assert _state(stores[1], keys) == _state(stores[0], keys)
            assert notified[1] == notified[0]
        finally:
            for store in stores:
                store.shutdown()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 3))
def test_scan_batch_refuses_what_decode_batch_refuses(junk: bytes, cut: int) -> None:
    valid = _raw_body([b"abc", b"defg"], ["TAGS\x01t", "KEYS\x01k"])
    for body in (junk, valid[: len(valid) - cut] + junk[:cut]):
        try:
            expected = [(e.flag, bytes(e.body), e.properties) for e in decode_batch(body)]
        except ClientError as exc:
            with pytest.raises(ClientError) as caught:
                scan_batch(body)
            assert str(caught.value) == str(exc)
            continue
        scanned = scan_batch(body)
        assert [(e.flag, bytes(e.body), e.properties) for e in scanned.entries()] == expected


def test_a_scanned_batch_through_the_transient_store_pool(tmp_path: Path) -> None:
    """The pool dispatches at commit: the store takes the object path and the batch is readable after."""
    config = small_config(tmp_path / "store", transient_store_pool_enable=True)
    store = MessageStore(config, clock=FakeClock())
    store.load()
    store.start()
    try:
        assert store.committer is not None
        raw = _raw_body([b"one", b"two"], ["UNIQ_KEY\x01U1", "UNIQ_KEY\x01U2\x02TAGS\x01t"])
        result = store.put_messages(StoreBatch(TOPIC, 0, 0, 1, BORN_HOST, (), "", scanned=scan_batch(raw)))
        assert result.ok and result.msg_num == 2
        store.commit(thorough=True)
        got = store.get_messages("g", TOPIC, 0, 0, 32)
        assert got.message_count == 2
    finally:
        store.shutdown()


@settings(max_examples=25, deadline=None)
@given(batches)
@example(
    [([(b"a" * 10, "TAGS\x01t"), (b"b" * 2500, "")], "", 0), ([(b"c" * 1990, "KEYS\x01k")], "x\x01y", 1)]
)
def test_refusals_match_the_object_path_with_a_small_message_limit(
    plan: list[tuple[list[tuple[bytes, str]], str, int]],
) -> None:
    """maxMessageSize 2000 against bodies up to 3000: the scanned path's summary checks must fall back to
    the per-message checks and refuse the same batches with the same remark."""
    with tempfile.TemporaryDirectory() as tmp:
        stores = [
            MessageStore(small_config(Path(tmp) / name, max_message_size=2000), clock=FakeClock())
            for name in ("objects", "scanned")
        ]
        for store in stores:
            store.load()
            store.start()
        try:
            for messages, batch_text, queue_id in plan:
                raw = _raw_body([b for b, _ in messages], [t for _, t in messages])
                args = (TOPIC, queue_id, 0, 1_700_000_000_123, BORN_HOST)
                by_objects = stores[0].put_messages(StoreBatch(*args, decode_batch(raw), batch_text))
                by_offsets = stores[1].put_messages(
                    StoreBatch(*args, (), batch_text, scanned=scan_batch(raw))
                )
                assert _result(by_offsets) == _result(by_objects)
            assert _state(stores[1], set()) == _state(stores[0], set())
        finally:
            for store in stores:
                store.shutdown()


def test_scan_summaries() -> None:
    raw = _raw_body([b"a" * 7, b"", b"bc"], ["KEYS\x01k\x02", "", "DELAY\x010\x02UNIQ_KEY\x01U"])
    scanned = scan_batch(raw)
    assert scanned.max_body == 7
    assert scanned.max_properties == len("DELAY\x010\x02UNIQ_KEY\x01U")
    assert scanned.open_ended == 1  # the third; the first ends in a separator, the second is empty
    assert scanned.delayed
    assert not scan_batch(_raw_body([b"x"], ["TAGS\x01t"])).delayed
