"""Gathered writes (`gather_writes_between_answers`, as the broker runs it): a deferred put with
`gather=True` leaves its record unwritten until `write_pending()`, which writes the lot with one pwritev.
Until then the log's written end (what the flusher syncs and replication sends) does not move; every
read and other write of the store writes it first; the bytes are those an ungathered put writes, across
segment ends too; what the kernel does not take is written through the mapping; a SYNC_FLUSH store, or
one not told to gather, writes at once."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.message.codec import decode_records
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.protocol.frames import FrameDecoder
from orbitmq.store import MessageStore
from orbitmq.store.config import SYNC_FLUSH
from orbitmq.transport.connection import Connection
from orbitmq.transport.dispatch import Dispatcher

from .conftest import make_batch, make_message, small_config


def _open(root: Path, clock: FakeClock, *, gather: bool = True, **overrides: Any) -> MessageStore:
    store = MessageStore(small_config(root, **overrides), clock=clock)
    store.load()
    store.start()
    if gather:
        store.gather_writes_between_answers()
    return store


def _log_bytes(root: Path) -> bytes:
    log_dir = root / "commitlog"
    return b"".join((log_dir / name).read_bytes() for name in sorted(os.listdir(log_dir)))


def _bodies(store: MessageStore, queue_id: int = 0) -> list[bytes]:
    bodies: list[bytes] = []
    offset = 0
    while True:
        got = store.get_messages("g", "TopicTest", queue_id, offset, 32, None)
        found = [m.body for m in decode_records(b"".join(got.buffers))]
        if not found:
            return bodies
        bodies += found
        offset = got.next_begin_offset


def test_write_pending_writes_the_bytes_an_ungathered_put_writes_across_segment_ends(
    tmp_path: Path, clock: FakeClock
) -> None:
    gathered = _open(tmp_path / "gathered", clock)
    plain = _open(tmp_path / "plain", clock, gather=False)
    try:
        # ~280 KB of records of many sizes into 64 KiB segments: gathers that end at a segment's end
        bodies = [bytes([65 + i % 26]) * (100 + 37 * i) for i in range(120)]
        got: list[tuple[int, int, str]] = []
        want: list[tuple[int, int, str]] = []
        for start in range(0, len(bodies), 10):
            for i, body in enumerate(bodies[start : start + 10]):
                msg = make_message(queue_id=(start + i) % 3, body=body)
                r = gathered.put_message(msg, dispatch_later=True, gather=True)
                assert r.ok
                got.append((r.wrote_offset, r.queue_offset, r.msg_id))
                p = plain.put_message(make_message(queue_id=(start + i) % 3, body=body))
                want.append((p.wrote_offset, p.queue_offset, p.msg_id))
            gathered.write_pending()
            gathered.dispatch_deferred()
        assert got == want
        assert len(os.listdir(tmp_path / "gathered" / "commitlog")) >= 5
        assert _log_bytes(tmp_path / "gathered") == _log_bytes(tmp_path / "plain")
        assert gathered.get_max_phy_offset() == plain.get_max_phy_offset()
        for queue_id in range(3):
            assert _bodies(gathered, queue_id) == bodies[queue_id::3]
    finally:
        gathered.shutdown()
        plain.shutdown()


def test_a_gathered_record_is_unseen_until_written_and_reads_and_writes_write_it_first(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = _open(tmp_path / "store", clock)
    try:
        end = store.get_max_phy_offset()
        a = store.put_message(make_message(body=b"a"), dispatch_later=True, gather=True)
        assert a.ok and a.wrote_offset == end
        # not in the written log: the flusher and replication read this end; the file holds no record
        assert store.get_max_phy_offset() == end and store.commit_log.pending_bytes == a.wrote_bytes
        segment = tmp_path / "store" / "commitlog" / f"{0:020d}"
        assert segment.read_bytes()[end : end + a.wrote_bytes] == bytes(a.wrote_bytes)
        assert _bodies(store) == [b"a"]  # a read writes (and dispatches) it first
        assert store.get_max_phy_offset() == a.end_offset and store.commit_log.pending_bytes == 0
        # an ungathered put, then a batch, after gathered ones: written first, in log order
        store.put_message(make_message(body=b"b"), dispatch_later=True, gather=True)
        c = store.put_message(make_message(body=b"c"))
        assert c.queue_offset == 2 and store.commit_log.pending_bytes == 0
        store.put_message(make_message(body=b"d"), dispatch_later=True, gather=True)
        assert store.put_messages(make_batch(b"e", b"f")).queue_offset == 4
        assert _bodies(store) == [b"a", b"b", b"c", b"d", b"e", b"f"]
    finally:
        store.shutdown()


@pytest.mark.parametrize("kernel", ["refuses", "takes a part"])
def test_what_the_kernel_does_not_take_is_written_through_the_mapping(
    tmp_path: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    kernel: str,
) -> None:
    store = _open(tmp_path / "store", clock)
    real_pwritev = os.pwritev
    calls: list[int] = []

    def pwritev(fd: int, buffers: list[Any], offset: int) -> int:
        calls.append(len(buffers))
        if kernel == "refuses":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwritev(fd, [bytes(buffers[0])[:10]], offset)  # the first 10 bytes only

    try:
        bodies = [b"x" * 500, b"y" * 700, b"z" * 900]
        for body in bodies:
            store.put_message(make_message(body=body), dispatch_later=True, gather=True)
        monkeypatch.setattr(os, "pwritev", pwritev)
        store.write_pending()
        monkeypatch.undo()
        assert calls == [3]  # one vectored write for the three records
        assert store.commit_log.pending_bytes == 0
        assert _bodies(store) == bodies
        assert ("written through the mapping" in caplog.text) == (kernel == "refuses")
    finally:
        store.shutdown()
    # and the log is whole after a restart (its records' CRCs checked by recovery and the decoder)
    again = _open(tmp_path / "store", clock)
    try:
        assert _bodies(again) == bodies
    finally:
        again.shutdown()


def test_sync_flush_stores_and_stores_not_told_to_gather_write_at_once(
    tmp_path: Path, clock: FakeClock
) -> None:
    for name, store in (
        ("sync flush", _open(tmp_path / "sync", clock, flush_disk_type=SYNC_FLUSH)),
        ("not told", _open(tmp_path / "plain", clock, gather=False)),
    ):
        try:
            if name == "not told":
                store.defer_dispatch_between_requests()
            r = store.put_message(make_message(body=b"now"), dispatch_later=True, gather=True)
            assert store.commit_log.pending_bytes == 0, name
            assert store.get_max_phy_offset() == r.end_offset, name
        finally:
            store.shutdown()


def test_shutdown_writes_gathered_records_and_the_restart_has_them(tmp_path: Path, clock: FakeClock) -> None:
    root = tmp_path / "store"
    store = _open(root, clock)
    for body in (b"one", b"two"):
        store.put_message(make_message(body=body), dispatch_later=True, gather=True)
    store.shutdown()
    again = _open(root, clock)
    try:
        assert _bodies(again) == [b"one", b"two"]
    finally:
        again.shutdown()


class _CheckingTransport(asyncio.Transport):
    """Writes are checked as they happen: each answer names the log end of the record it acknowledges,
    and that record must be in the written log (and in the file) before the answer's bytes leave."""

    def __init__(self, conn: Connection, store: MessageStore, segment: Path) -> None:
        super().__init__()
        self.conn = conn
        self.store = store
        self.segment = segment
        self.writes: list[list[int]] = []
        self._decoder = FrameDecoder()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5555), "sockname": ("127.0.0.1", 10911)}.get(name, default)

    def writelines(self, list_of_data: Any) -> None:
        ends = [
            int(decode_command(f).remark or "0")
            for f in self._decoder.feed(b"".join(map(bytes, list_of_data)))
        ]
        data = self.segment.read_bytes()
        for end in ends:
            assert end <= self.store.get_max_phy_offset(), "an answer left before its record was written"
            assert data[end - 8 : end] != bytes(8)  # (the record's last bytes: its properties)
        self.writes.append(ends)

    def is_closing(self) -> bool:
        return False


async def test_no_answer_leaves_before_the_record_it_acknowledges(tmp_path: Path, clock: FakeClock) -> None:
    store = _open(tmp_path / "store", clock)
    dispatcher = Dispatcher(name="unit")

    def put(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        msg = make_message(body=request.body)
        r = store.put_message(msg, dispatch_later=True, gather=conn.turn_size >= 2)
        return RemotingCommand.response(ResponseCode.SUCCESS, remark=str(r.end_offset))

    dispatcher.register(310, put)
    conn = Connection(
        request_handler=dispatcher.handle,
        before_write=store.write_pending,
        after_turn=store.dispatch_deferred,
        # (the whole turn, however slow the machine: its first put creates and allocates the store's files)
        turn_budget=10.0,
    )
    transport = _CheckingTransport(conn, store, tmp_path / "store" / "commitlog" / f"{0:020d}")
    conn.connection_made(transport)
    try:
        # a turn of ten sends: the first answer at once, the other nine together at the turn's end
        conn.data_received(
            b"".join(encode_command_bytes(RemotingCommand.request(310, body=b"m%d" % i)) for i in range(10))
        )
        assert [len(w) for w in transport.writes] == [1, 9]
        assert store.commit_log.pending_bytes == 0 and _bodies(store) == [b"m%d" % i for i in range(10)]
        conn.data_received(encode_command_bytes(RemotingCommand.request(310, body=b"lone")))
        assert [len(w) for w in transport.writes] == [1, 9, 1]
    finally:
        store.shutdown()
