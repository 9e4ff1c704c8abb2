"""Connection and Dispatcher without sockets: a fake transport records what is written."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from orbitmq.common.errors import ConnectError, RequestTimeoutError
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.protocol.frames import FrameDecoder
from orbitmq.transport.connection import TURN_BUDGET, Connection, split_address
from orbitmq.transport.dispatch import Dispatcher, Later, answer_together


class FakeTransport(asyncio.Transport):
    def __init__(self, conn: Connection) -> None:
        super().__init__()
        self.conn = conn
        self.written: list[bytes] = []
        self.closed = False
        self.aborted = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5555), "sockname": ("127.0.0.1", 9876)}.get(name, default)

    def writelines(self, list_of_data: Any) -> None:
        self.written.append(b"".join(bytes(piece) for piece in list_of_data))

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.conn.connection_lost(None)

    def abort(self) -> None:
        self.aborted = True
        self.close()

    def is_closing(self) -> bool:
        return self.closed

    def sent_commands(self) -> list[RemotingCommand]:
        decoder = FrameDecoder()
        return [decode_command(f) for chunk in self.written for f in decoder.feed(chunk)]


async def settle() -> None:
    """Let ready callbacks run (sends are flushed one loop iteration later); no real time passes."""
    for _ in range(5):
        await asyncio.sleep(0)


def open_connection(
    dispatcher: Dispatcher | None = None, turn_budget: float = TURN_BUDGET
) -> tuple[Connection, FakeTransport]:
    conn = Connection(request_handler=dispatcher.handle if dispatcher else None, turn_budget=turn_budget)
    transport = FakeTransport(conn)
    conn.connection_made(transport)
    return conn, transport


async def test_responses_complete_the_matching_request_in_any_order() -> None:
    conn, transport = open_connection()
    requests = [RemotingCommand.request(100 + i) for i in range(3)]
    waits = [asyncio.ensure_future(conn.invoke(r, timeout=10)) for r in requests]
    await settle()
    assert [c.opaque for c in transport.sent_commands()] == [r.opaque for r in requests]
    assert conn.pending_count == 3
    # Answer in reverse order, all three in one chunk.
    chunk = b"".join(
        encode_command_bytes(RemotingCommand.response(0, remark=str(r.code)).response_to(r))
        for r in reversed(requests)
    )
    conn.data_received(chunk)
    results = await asyncio.gather(*waits)
    assert [r.remark for r in results] == ["100", "101", "102"]
    assert conn.pending_count == 0


async def test_timeout_removes_pending_entry() -> None:
    conn, _ = open_connection()
    with pytest.raises(RequestTimeoutError):
        await conn.invoke(RemotingCommand.request(1), timeout=0.0)
    assert conn.pending_count == 0


async def test_cancelled_invoke_removes_pending_entry() -> None:
    conn, _ = open_connection()
    task = asyncio.ensure_future(conn.invoke(RemotingCommand.request(1), timeout=10))
    await asyncio.sleep(0)
    assert conn.pending_count == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert conn.pending_count == 0


async def test_close_fails_pending_and_runs_callbacks_once() -> None:
    conn, transport = open_connection()
    reasons: list[str | None] = []
    conn.add_close_callback(lambda c: reasons.append(c.close_reason))
    task = asyncio.ensure_future(conn.invoke(RemotingCommand.request(1), timeout=10))
    await asyncio.sleep(0)
    conn.close("going away")
    conn.close("twice")
    with pytest.raises(ConnectError, match="going away"):
        await task
    assert reasons == ["going away"] and transport.closed
    with pytest.raises(ConnectError):
        await conn.invoke(RemotingCommand.request(1), timeout=1)
    late: list[Connection] = []
    conn.add_close_callback(late.append)  # already closed: called at once
    assert late == [conn]


async def test_broken_frame_aborts_the_connection() -> None:
    conn, transport = open_connection()
    conn.data_received(struct.pack(">i", 0x7FFFFFFF))
    assert conn.closed and transport.aborted
    assert conn.close_reason is not None and "protocol error" in conn.close_reason


async def test_oneway_sets_the_flag() -> None:
    conn, transport = open_connection()
    await conn.invoke_oneway(RemotingCommand.request(7))
    await settle()
    (sent,) = transport.sent_commands()
    assert sent.is_oneway and not sent.is_response


async def test_flow_control_holds_writers_until_resumed() -> None:
    conn, transport = open_connection()
    conn.pause_writing()
    task = asyncio.ensure_future(conn.invoke_oneway(RemotingCommand.request(7)))
    await asyncio.sleep(0)
    assert transport.written == [] and not task.done()
    conn.resume_writing()
    await task
    await settle()
    assert len(transport.written) == 1


async def test_dispatcher_error_answers_and_processor_tasks() -> None:
    dispatcher = Dispatcher(name="unit")
    gate = asyncio.Event()

    async def slow(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await gate.wait()
        return RemotingCommand.response(ResponseCode.SUCCESS)

    async def broken(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        raise ValueError("bad input")

    dispatcher.register(1, slow, limit=1)
    dispatcher.register(2, broken)
    conn, transport = open_connection(dispatcher)
    first, second = RemotingCommand.request(1), RemotingCommand.request(1)
    unknown, failing = RemotingCommand.request(3), RemotingCommand.request(2)
    oneway_unknown = RemotingCommand.request(3, oneway=True)
    conn.data_received(
        b"".join(encode_command_bytes(c) for c in (first, second, unknown, failing, oneway_unknown))
    )
    await settle()
    answers = {c.opaque: c for c in transport.sent_commands()}
    assert answers[second.opaque].code == ResponseCode.SYSTEM_BUSY
    assert answers[unknown.opaque].code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert answers[failing.opaque].code == ResponseCode.SYSTEM_ERROR
    assert answers[failing.opaque].remark == "ValueError: bad input"
    assert oneway_unknown.opaque not in answers and first.opaque not in answers
    gate.set()
    await settle()
    answers = {c.opaque: c for c in transport.sent_commands()}
    assert answers[first.opaque].code == ResponseCode.SUCCESS
    assert dispatcher.pending(1) == 0
    await dispatcher.stop()


def test_split_address() -> None:
    assert split_address("127.0.0.1:9876") == ("127.0.0.1", 9876)
    assert split_address("[::1]:10911") == ("::1", 10911)
    for bad in ("nohost", ":1", "h:", "h:x"):
        with pytest.raises(ValueError):
            split_address(bad)


async def test_the_first_send_of_an_iteration_leaves_at_once_the_rest_share_one_write() -> None:
    conn, transport = open_connection()
    for code in (1, 2, 3):
        conn.send(RemotingCommand.request(code, oneway=True))
    # the first at once (the peer starts on it); the others once the iteration ends
    assert [c.code for c in transport.sent_commands()] == [1]
    await settle()
    assert len(transport.written) == 2
    assert [c.code for c in transport.sent_commands()] == [1, 2, 3]
    conn.send(RemotingCommand.request(4, oneway=True))  # a new iteration: at once again
    conn.send(RemotingCommand.request(5, oneway=True))
    conn.close("bye")  # flushes what is gathered before the FIN
    assert [c.code for c in transport.sent_commands()] == [1, 2, 3, 4, 5]
    assert len(transport.written) == 4


async def test_a_lone_send_per_turn_leaves_at_once_and_schedules_no_end_of_turn() -> None:
    # A lone sender's turn (read an answer, send the next request) costs the loop no extra iteration:
    # its command leaves at once and nothing is scheduled. Until the next read or flush, a further command
    # gathers (it may share a turn with the first) and still leaves when the turn ends.
    conn, transport = open_connection()
    conn.send(RemotingCommand.request(1, oneway=True))
    assert [c.code for c in transport.sent_commands()] == [1]
    assert conn._flush_handle is None
    await settle()
    conn.send(RemotingCommand.request(2, oneway=True))  # no read since 1 left: gathers
    assert [c.code for c in transport.sent_commands()] == [1]
    await settle()
    assert [c.code for c in transport.sent_commands()] == [1, 2]
    conn.send(RemotingCommand.request(3, oneway=True))  # the flush started afresh: at once
    assert [c.code for c in transport.sent_commands()] == [1, 2, 3]
    await settle()
    conn.data_received(encode_command_bytes(RemotingCommand.response(ResponseCode.SUCCESS)))
    conn.send(RemotingCommand.request(4, oneway=True))  # a read started a new turn: at once
    assert [c.code for c in transport.sent_commands()] == [1, 2, 3, 4]
    assert conn._flush_handle is None
    assert len(transport.written) == 4


async def test_answers_to_a_chunk_first_one_at_once_then_the_rest_together() -> None:
    dispatcher = Dispatcher(name="unit")

    def echo(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(ResponseCode.SUCCESS, remark=str(request.code))

    for code in (11, 12, 13):
        dispatcher.register(code, echo)
    # The turn budget is wall time: a busy machine could use it up mid-chunk, which is not under test here.
    conn, transport = open_connection(dispatcher, turn_budget=60.0)
    conn.data_received(b"".join(encode_command_bytes(RemotingCommand.request(c)) for c in (11, 12, 13)))
    # handled inline: answer 11 left alone, 12 and 13 together when the chunk was done
    assert len(transport.written) == 2
    assert [c.remark for c in transport.sent_commands()] == ["11", "12", "13"]
    await settle()
    assert len(transport.written) == 2


def open_hooked_connection(
    dispatcher: Dispatcher, before_write: Any, after_turn: Any
) -> tuple[Connection, FakeTransport]:
    conn = Connection(request_handler=dispatcher.handle, before_write=before_write, after_turn=after_turn)
    transport = FakeTransport(conn)
    conn.connection_made(transport)
    return conn, transport


async def test_before_write_precedes_every_write_and_after_turn_ends_each_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dispatcher = Dispatcher(name="unit")
    seen: list[tuple[str, int]] = []  # (what happened, answers written by then)
    gate = asyncio.Event()

    def echo(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        seen.append((f"processor of a turn of {conn.turn_size}", len(transport.sent_commands())))
        return RemotingCommand.response(ResponseCode.SUCCESS)

    async def waits(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        await gate.wait()
        return RemotingCommand.response(ResponseCode.SUCCESS)

    def before() -> None:
        seen.append(("before", len(transport.sent_commands())))

    def after() -> None:
        seen.append(("after", len(transport.sent_commands())))
        if len(seen) == 8:
            raise RuntimeError("the work after the second turn failed")

    dispatcher.register(11, echo)
    dispatcher.register(12, waits)
    conn, transport = open_hooked_connection(dispatcher, before, after)
    conn.data_received(b"".join(encode_command_bytes(RemotingCommand.request(c)) for c in (11, 11, 12)))
    # The first answer left at once, the second with the turn's end: each write after `before_write`;
    # `after_turn` once the turn was done (the waiting request's answer comes later).
    assert seen == [
        ("processor of a turn of 3", 0),
        ("before", 0),
        ("processor of a turn of 3", 1),
        ("before", 1),
        ("after", 2),
    ]
    conn.data_received(encode_command_bytes(RemotingCommand.request(11)))
    # (a failing after-work is logged and the connection goes on)
    assert seen[5:] == [("processor of a turn of 1", 2), ("before", 2), ("after", 3)]
    assert "the work after a turn failed" in caplog.text
    gate.set()
    await settle()
    # the late answer is written after `before_write` too
    assert seen[-1] == ("before", 3)
    assert len(transport.sent_commands()) == 4 and not conn.closed


async def test_a_failing_before_write_closes_the_connection_without_writing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dispatcher = Dispatcher(name="unit")
    dispatcher.register(11, lambda conn, request: RemotingCommand.response(ResponseCode.SUCCESS))

    def before() -> None:
        raise OSError("the records could not be written")

    turns: list[int] = []
    conn, transport = open_hooked_connection(dispatcher, before, lambda: turns.append(1))
    conn.data_received(b"".join(encode_command_bytes(RemotingCommand.request(11)) for _ in range(3)))
    # Nothing may leave that the hook did not clear: no answer is written, the connection is aborted.
    assert transport.written == [] and transport.aborted and conn.closed
    assert "the work before a write failed" in caplog.text
    assert turns == [1]


async def test_answers_given_together_leave_in_one_write_per_connection_then_are_counted() -> None:
    dispatcher = Dispatcher(name="unit")
    laters: list[Later] = []

    def waits(conn: Connection, request: RemotingCommand) -> Later:
        later = Later()
        laters.append(later)
        return later

    dispatcher.register(11, waits)
    one, one_transport = open_connection(dispatcher)
    two, two_transport = open_connection(dispatcher)
    requests = [RemotingCommand.request(11) for _ in range(5)]
    oneway = RemotingCommand.request(11, oneway=True)
    one.data_received(b"".join(encode_command_bytes(r) for r in (*requests[:3], oneway)))
    two.data_received(b"".join(encode_command_bytes(r) for r in requests[3:]))
    assert len(laters) == 6 and (one.inflight, two.inflight) == (4, 2)
    assert dispatcher.pending(11) == 6
    answers = [RemotingCommand.response(ResponseCode.SUCCESS, remark=str(i)) for i in range(6)]
    answer_together([*zip(laters, answers, strict=True), (laters[0], answers[0])])  # (the last: again)
    # each connection's answers in one write, in order; none for the oneway request, none twice
    assert len(one_transport.written) == 1 and len(two_transport.written) == 1
    assert [(c.opaque, c.remark) for c in one_transport.sent_commands()] == [
        (r.opaque, str(i)) for i, r in enumerate(requests[:3])
    ]
    assert [c.remark for c in two_transport.sent_commands()] == ["4", "5"]
    assert (one.inflight, two.inflight) == (0, 0) and dispatcher.pending(11) == 0
    assert sum(dispatcher.route_stats()[11].responses.values()) == 6


async def test_a_large_window_leaves_in_parts_while_it_is_still_being_built() -> None:
    # 200 pipelined sends in one iteration: the peer gets the first ones before the last is encoded (it
    # can work meanwhile), in order and in a few writes, not one per command.
    conn, transport = open_connection()
    body = b"x" * 1024
    for code in range(200):
        conn.send(RemotingCommand.request(code, oneway=True, body=body))
    assert 1 <= len(transport.written) < 200
    await settle()
    assert [c.code for c in transport.sent_commands()] == list(range(200))
    assert len(transport.written) <= 200 // 4
