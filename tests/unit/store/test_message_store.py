"""MessageStore write and read paths: puts, batches, validation, transaction types, delay tags, pulls
(status table of fact sheet 3.4, filters, batch limits), lookups by offset, time and key."""

from __future__ import annotations

import logging
import os
import types
from pathlib import Path

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.message.batch import encode_batch
from orbitmq.message.batch_scan import decode_batch
from orbitmq.message.codec import decode_record, decode_records
from orbitmq.message.hashing import java_string_hash
from orbitmq.message.model import Message
from orbitmq.message.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from orbitmq.store import (
    GetMessageStatus,
    MessageStore,
    PutMessageStatus,
    StoreBatch,
    StoreConfig,
)
from orbitmq.store.consume_queue_table import REMOVER

from .conftest import BORN_HOST, make_message, small_config

G = GetMessageStatus


def test_put_assigns_offsets_and_reads_back(store: MessageStore) -> None:
    r0 = store.put_message(make_message(body=b"first", tags="TagA"))
    r1 = store.put_message(make_message(body=b"second"))
    assert r0.ok and r1.ok
    assert (r0.queue_offset, r1.queue_offset) == (0, 1)
    assert r0.wrote_offset == 0 and r1.wrote_offset == r0.end_offset
    assert r0.msg_id == "7F00000100002A9F0000000000000000"
    got = store.get_messages("g", "TopicTest", 0, 0, 32, None)
    assert got.status is G.FOUND and got.next_begin_offset == 2 and got.max_offset == 2
    msgs = decode_records(b"".join(got.buffers))
    assert [m.body for m in msgs] == [b"first", b"second"]
    assert msgs[0].store_host == "127.0.0.1:10911" and msgs[0].born_host == "10.0.0.7:50000"
    assert isinstance(got.buffers[0], memoryview)
    assert store.look_message_by_offset(r1.wrote_offset).body == b"second"  # type: ignore[union-attr]
    assert store.look_message_by_offset(r1.wrote_offset + 1) is None


def test_validation_statuses(store: MessageStore) -> None:
    assert store.put_message(make_message("T" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    big = make_message(body=b"x" * (16 * 1024 + 1))
    assert store.put_message(big).status is PutMessageStatus.MESSAGE_ILLEGAL
    props = make_message(extra={"p": "v" * 33000})
    assert store.put_message(props).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.get_max_phy_offset() == 0


def test_not_running_and_slave_refuse_puts(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path / "a"))
    s.load()
    assert s.put_message(make_message()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    s.shutdown()
    slave = MessageStore(small_config(tmp_path / "b", broker_role="SLAVE"))
    slave.load()
    slave.start()
    assert slave.put_message(make_message()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    slave.shutdown()


def test_batch_put_consecutive_offsets_and_batch_properties(store: MessageStore) -> None:
    body = encode_batch([Message.create("TopicTest", f"m{i}", tags="B", keys=f"bk{i}") for i in range(5)])
    batch = StoreBatch(
        topic="TopicTest",
        queue_id=2,
        sys_flag=0,
        born_timestamp=5,
        born_host=BORN_HOST,
        entries=decode_batch(body),
        properties="CLUSTER\x01c1",
    )
    store.put_message(make_message(queue_id=2))
    r = store.put_messages(batch)
    assert r.ok and r.msg_num == 5 and r.queue_offset == 1
    assert len(r.msg_id.split(",")) == 5
    got = store.get_messages("g", "TopicTest", 2, 1, 32, None)
    msgs = decode_records(b"".join(got.buffers))
    assert [m.queue_offset for m in msgs] == [1, 2, 3, 4, 5]
    assert [m.body for m in msgs] == [f"m{i}".encode() for i in range(5)]
    assert all(m.properties["CLUSTER"] == "c1" and m.tags == "B" for m in msgs)
    q = store.query_message("TopicTest", "bk3", 10, 0, 1 << 62)
    assert decode_record(q.buffers[0]).body == b"m3"


def test_batch_goes_whole_to_the_next_segment(store: MessageStore) -> None:
    while store.get_max_phy_offset() < 60 * 1024:
        store.put_message(make_message(body=b"f" * 900))
    entries = decode_batch(encode_batch([Message.create("TopicTest", b"z" * 1000) for _ in range(8)]))
    r = store.put_messages(StoreBatch("TopicTest", 0, 0, 1, BORN_HOST, entries))
    assert r.ok and r.wrote_offset == 64 * 1024


def test_transaction_types(store: MessageStore) -> None:
    prepared = store.put_message(make_message(sys_flag=TRANSACTION_PREPARED_TYPE, keys="half"))
    rollback = store.put_message(make_message(sys_flag=TRANSACTION_ROLLBACK_TYPE, keys="rb"))
    commit = store.put_message(make_message(sys_flag=TRANSACTION_COMMIT_TYPE, keys="c"))
    assert prepared.queue_offset == 0 and rollback.queue_offset == 0 and commit.queue_offset == 0
    assert store.get_max_offset_in_queue("TopicTest", 0) == 1
    got = store.get_messages("g", "TopicTest", 0, 0, 32, None)
    assert got.message_count == 1 and decode_record(got.buffers[0]).commit_log_offset == commit.wrote_offset
    assert len(store.query_message("TopicTest", "half", 5, 0, 1 << 62).buffers) == 1
    assert store.query_message("TopicTest", "rb", 5, 0, 1 << 62).buffers == []


def test_schedule_topic_tags_code_is_delivery_time(store: MessageStore, clock: FakeClock) -> None:
    r = store.put_message(make_message("SCHEDULE_TOPIC_XXXX", 2, extra={"DELAY": "3", "REAL_TOPIC": "T"}))
    entries = store.read_consume_queue("SCHEDULE_TOPIC_XXXX", 2, 0, 10)
    assert entries == [(0, r.wrote_offset, r.wrote_bytes, clock.now_ms() + 10_000)]
    assert store.read_consume_queue("SCHEDULE_TOPIC_XXXX", 2, 1, 10) == []


def test_tag_filter_and_no_matched_message(store: MessageStore) -> None:
    for i in range(6):
        store.put_message(make_message(tags="A" if i % 3 == 0 else "B"))
    code_a = java_string_hash("A")
    got = store.get_messages("g", "TopicTest", 0, 0, 32, lambda code: code == code_a)
    assert got.status is G.FOUND and got.message_count == 2 and got.next_begin_offset == 6
    none = store.get_messages("g", "TopicTest", 0, 0, 32, lambda code: False)
    assert none.status is G.NO_MATCHED_MESSAGE and none.next_begin_offset == 6


def test_status_table(store: MessageStore) -> None:
    missing = store.get_messages("g", "Nope", 0, 5, 32, None)
    assert (missing.status, missing.next_begin_offset) == (G.NO_MATCHED_LOGIC_QUEUE, 0)
    for _ in range(3):
        store.put_message(make_message())
    one = store.get_messages("g", "TopicTest", 0, 3, 32, None)
    assert (one.status, one.next_begin_offset, one.max_offset) == (G.OFFSET_OVERFLOW_ONE, 3, 3)
    bad = store.get_messages("g", "TopicTest", 0, 10, 32, None)
    assert (bad.status, bad.next_begin_offset) == (G.OFFSET_OVERFLOW_BADLY, 3)
    cq = store.queues.find("TopicTest", 0)
    assert cq is not None
    cq.min_logic_offset = 2 * 20
    small = store.get_messages("g", "TopicTest", 0, 1, 32, None)
    assert (small.status, small.next_begin_offset, small.min_offset) == (G.OFFSET_TOO_SMALL, 2, 2)


def test_slave_keeps_requested_offset_without_offset_check(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path, broker_role="SLAVE"))
    s.load()
    s.start()
    try:
        got = s.get_messages("g", "Nope", 0, 7, 32, None)
        assert (got.status, got.next_begin_offset) == (G.NO_MATCHED_LOGIC_QUEUE, 7)
    finally:
        s.shutdown()


def test_pull_batch_limits_in_memory(store: MessageStore) -> None:
    for _ in range(40):
        store.put_message(make_message(body=b"s" * 10))
    got = store.get_messages("g", "TopicTest", 0, 0, 1000, None)
    assert got.message_count == 32 and got.next_begin_offset == 32
    assert store.get_messages("g", "TopicTest", 0, 0, 5, None).message_count == 5


def test_pull_byte_limit(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path, max_transfer_bytes_on_message_in_memory=3000))
    s.load()
    s.start()
    try:
        for _ in range(10):
            s.put_message(make_message(body=b"s" * 1000))
        got = s.get_messages("g", "TopicTest", 0, 0, 32, None)
        assert got.message_count == 2 and got.buffer_total_size <= 3000 and got.next_begin_offset == 2
    finally:
        s.shutdown()


def test_offset_by_time_earliest_and_store_timestamps(store: MessageStore, clock: FakeClock) -> None:
    t0 = clock.now_ms()
    for _ in range(10):
        store.put_message(make_message())
        clock.advance(1)
    assert store.get_offset_in_queue_by_time("TopicTest", 0, t0 + 4000) == 4
    assert store.get_offset_in_queue_by_time("TopicTest", 0, t0 + 4400) == 4
    assert store.get_offset_in_queue_by_time("TopicTest", 0, t0 + 4600) == 5
    assert store.get_offset_in_queue_by_time("TopicTest", 0, t0 - 10_000) == 0
    assert store.get_offset_in_queue_by_time("TopicTest", 0, t0 + 99_000) == 9
    assert store.get_earliest_message_time("TopicTest", 0) == t0
    assert store.get_message_store_timestamp("TopicTest", 0, 3) == t0 + 3000
    assert store.get_earliest_store_time() == t0


def test_query_by_key_and_unique_id_in_time_range(store: MessageStore, clock: FakeClock) -> None:
    t0 = clock.now_ms()
    for i in range(300):  # more than one index file (200 entries each)
        store.put_message(make_message(keys=f"k{i % 7} other", uniq=f"UNIQ{i}", body=str(i).encode()))
        clock.advance(1)
    assert len(store.key_index.files) > 1  # type: ignore[union-attr]
    found = store.query_message("TopicTest", "k3", 1000, 0, 1 << 62)
    bodies = [int(decode_record(b).body) for b in found.buffers]
    assert bodies == sorted((i for i in range(300) if i % 7 == 3), reverse=True)
    assert len(store.query_message("TopicTest", "other", 1000, 0, 1 << 62).buffers) == 64
    window = store.query_message("TopicTest", "k3", 1000, t0 + 100_000, t0 + 150_000)
    assert sorted(int(decode_record(b).body) for b in window.buffers) == [
        i for i in range(100, 151) if i % 7 == 3
    ]
    uniq = store.query_message("TopicTest", "UNIQ42", 1, 0, 1 << 62)
    assert [decode_record(b).body for b in uniq.buffers] == [b"42"]
    assert store.query_message("Other", "k3", 10, 0, 1 << 62).buffers == []
    assert found.index_last_update_phyoffset == store.get_max_phy_offset() - found.buffers[0].nbytes


def test_arrival_listener_called_on_dispatch(store: MessageStore) -> None:
    seen: list[tuple[str, int, int, int]] = []
    store.add_arrival_listener(lambda *args: seen.append(args))
    store.put_message(make_message(queue_id=1, tags="TagA"))
    assert seen == [("TopicTest", 1, 1, java_string_hash("TagA"))]


def test_delete_topics_and_runtime_info(store: MessageStore) -> None:
    store.put_message(make_message("Gone"))
    store.put_message(make_message("Kept"))
    store.delete_topics({"Gone"})
    assert store.get_max_offset_in_queue("Gone", 0) == 0
    assert store.topics() == {"Kept"}
    assert store.put_message(make_message("Gone")).queue_offset == 0
    info = store.runtime_info()
    assert info["commitLogMaxOffset"] == str(store.get_max_phy_offset())
    assert info["putMessageTimesTotal"] == "3"


def test_config_from_properties() -> None:
    config = StoreConfig.from_properties(
        {
            "storePathRootDir": "/data/store",
            "mappedFileSizeCommitLog": "1048576",
            "flushDiskType": "SYNC_FLUSH",
            "messageIndexEnable": "false",
            "brokerName": "ignored",
            "deleteWhen": "03;04",
        }
    )
    assert config.store_path_root_dir == "/data/store"
    assert config.mapped_file_size_commit_log == 1048576
    assert config.sync_flush and not config.message_index_enable
    assert config.delete_hours() == {3, 4}
    assert config.commit_log_dir == "/data/store/commitlog"
    assert config.delay_levels_ms()[18] == 7_200_000


def test_key_hash_with_topic_prefix_equals_full_hash() -> None:
    from orbitmq.message.hashing import index_key_hash
    from orbitmq.store.key_index import key_hash_with_prefix, prefix_hash

    for topic, key in [
        ("T", "k"),
        ("TopicTest", "0A0000010001AB12"),
        ("t", ""),
        ("主题", "键😀"),
        ("T", "x" * 300),
    ]:
        assert key_hash_with_prefix(prefix_hash(topic), key) == index_key_hash(f"{topic}#{key}")


def test_concurrent_writers_keep_queue_order(store: MessageStore) -> None:
    import threading

    def writer(w: int) -> None:
        for i in range(200):
            assert store.put_message(make_message(queue_id=0, body=b"%d-%d" % (w, i))).ok

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get_max_offset_in_queue("TopicTest", 0) == 800
    offset = 0
    last_physical = -1
    while offset < 800:
        got = store.get_messages("g", "TopicTest", 0, offset, 32, None)
        for m in decode_records(b"".join(got.buffers)):
            assert m.queue_offset == offset and m.commit_log_offset > last_physical
            last_physical = m.commit_log_offset
            offset += 1


def test_failing_arrival_listener_does_not_fail_the_put(store: MessageStore) -> None:
    def boom(*_: object) -> None:
        raise RuntimeError("listener bug")

    store.add_arrival_listener(boom)
    assert store.put_message(make_message()).ok
    assert store.get_max_offset_in_queue("TopicTest", 0) == 1


def test_a_queue_deleted_under_a_flush_round_is_skipped_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    s = MessageStore(small_config(tmp_path / "store"))
    s.start()
    flusher = s.flusher
    assert flusher is not None
    flusher.stop(final_flush=False)  # the flush round below is the only one (no thread racing the test)
    try:
        assert s.put_message(make_message("Gone")).status == PutMessageStatus.PUT_OK
        s.put_message(make_message("Kept"))
        stale = s.queues.snapshot()  # what a flush round took just before DELETE_TOPIC
        s.delete_topics({"Gone"})
        assert not (tmp_path / "store" / "consumequeue" / "Gone").exists()
        # (the flusher's view of the table, not the table: compiled, its methods cannot be patched)
        monkeypatch.setattr(flusher, "queues", types.SimpleNamespace(snapshot=lambda: stale))
        with caplog.at_level(logging.WARNING, logger="orbitmq.store"):
            flusher.flush_consume_queues(0)
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        kept = s.queues.find("Kept", 0)
        assert kept is not None and kept.files.flushed_where > 0  # the live queue was flushed
    finally:
        s.shutdown()


def test_deleted_topic_files_go_off_thread_and_leftovers_at_load(tmp_path: Path) -> None:
    root = tmp_path / "store"
    s = MessageStore(small_config(root))
    s.start()
    try:
        for queue_id in range(3):
            s.put_message(make_message("Gone", queue_id))
        s.delete_topics({"Gone"})
        # A new topic of the same name starts fresh while the old files are being removed.
        assert s.put_message(make_message("Gone")).queue_offset == 0
        assert REMOVER.wait_idle(10)
        names = sorted(os.listdir(root / "consumequeue"))
        assert names == ["Gone"]
        assert sorted(os.listdir(root / "consumequeue" / "Gone")) == ["0"]
    finally:
        s.shutdown()
    # A crash between the rename and the removal leaves a tombstone: removed at load, never a topic.
    tomb = root / "consumequeue" / ".deleted-Old-1-1" / "0"
    tomb.mkdir(parents=True)
    (tomb / "00000000000000000000").write_bytes(bytes(6000))
    s = MessageStore(small_config(root))
    s.start()
    try:
        assert s.topics() == {"Gone"}
        assert not (root / "consumequeue" / ".deleted-Old-1-1").exists()
    finally:
        s.shutdown()


def test_a_new_store_says_it_was_created_not_recovered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="orbitmq.store.message_store")
    store = MessageStore(small_config(tmp_path), clock=FakeClock())
    store.load()
    store.start()
    assert [r.getMessage() for r in caplog.records] == [f"store {tmp_path} created: a new, empty commit log"]
    store.put_message(make_message())
    store.shutdown()
    caplog.clear()
    again = MessageStore(small_config(tmp_path), clock=FakeClock())
    again.load()
    again.shutdown()
    assert "recovered" in caplog.records[0].getMessage()
    assert "after a normal stop" in caplog.records[0].getMessage()
