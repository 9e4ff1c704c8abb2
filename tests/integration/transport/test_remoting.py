"""RemotingServer / RemotingClient / Connection over real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator

import pytest

from orbitmq.common.errors import ConnectError, RequestTimeoutError
from orbitmq.protocol.codes import RequestCode, ResponseCode, SerializeType
from orbitmq.protocol.command import RemotingCommand, encode_command_bytes
from orbitmq.transport import Connection, RemotingClient, RemotingServer
from orbitmq.transport.connection import ResponseCallback
from orbitmq.transport.limits import ServerLimits

ECHO = 1000
BLOCK = 1001
FAIL = 1002
LIMITED = 1003
ONEWAY_SINK = 1004


class Harness:
    def __init__(self, server: RemotingServer, client: RemotingClient) -> None:
        self.server = server
        self.client = client
        self.release = asyncio.Event()
        self.oneway_seen: list[RemotingCommand] = []
        self.server_conns: list[Connection] = []


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    server = RemotingServer(name="test-server")
    client = RemotingClient(connect_timeout=2.0)
    h = Harness(server, client)

    async def echo(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        # Yield a varying number of times so responses come back out of request order.
        for _ in range(int(req.ext_fields.get("spin", "0"))):
            await asyncio.sleep(0)
        return RemotingCommand.response(ResponseCode.SUCCESS, ext_fields=req.ext_fields, body=req.body)

    async def block(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await h.release.wait()
        return RemotingCommand.response(ResponseCode.SUCCESS, remark="released")

    async def fail(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("the processor broke on purpose")

    async def sink(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        h.oneway_seen.append(req)
        return RemotingCommand.response(ResponseCode.SUCCESS, remark="must never be sent")

    server.register(ECHO, echo)
    server.register(BLOCK, block)
    server.register(FAIL, fail)
    server.register(LIMITED, block, limit=2)
    server.register(ONEWAY_SINK, sink)
    server.add_connection_listener(on_open=h.server_conns.append)
    await server.start()
    try:
        yield h
    finally:
        h.release.set()
        await client.close()
        await server.stop()


async def test_concurrent_requests_are_correlated_by_opaque(harness: Harness) -> None:
    addr = harness.server.address

    async def one(i: int) -> None:
        req = RemotingCommand.request(ECHO, {"i": str(i), "spin": str(i % 7)}, body=f"body-{i}".encode())
        resp = await harness.client.invoke(addr, req, timeout=5)
        assert resp.code == ResponseCode.SUCCESS
        assert resp.opaque == req.opaque
        assert resp.ext_fields["i"] == str(i)
        assert bytes(resp.body) == f"body-{i}".encode()

    await asyncio.gather(*(one(i) for i in range(300)))
    conn = await harness.client.get_connection(addr)
    assert conn.pending_count == 0
    assert len(harness.client.connections) == 1  # all over one pooled connection


async def test_oneway_is_delivered_and_never_answered(harness: Harness) -> None:
    addr = harness.server.address
    await harness.client.invoke_oneway(addr, RemotingCommand.request(ONEWAY_SINK, {"k": "v"}))
    # Unknown codes and failing processors stay silent for oneway requests too.
    await harness.client.invoke_oneway(addr, RemotingCommand.request(9999))
    await harness.client.invoke_oneway(addr, RemotingCommand.request(FAIL))
    # A normal request after them is answered with its own response, nothing stray in between.
    resp = await harness.client.invoke(addr, RemotingCommand.request(ECHO, {"x": "1"}), timeout=5)
    assert resp.ext_fields["x"] == "1"
    for _ in range(100):
        if harness.oneway_seen:
            break
        await asyncio.sleep(0.01)
    assert [r.ext_fields["k"] for r in harness.oneway_seen] == ["v"]
    assert harness.oneway_seen[0].is_oneway


async def test_timeout_removes_the_pending_entry_and_a_late_answer_is_dropped(harness: Harness) -> None:
    addr = harness.server.address
    conn = await harness.client.get_connection(addr)
    with pytest.raises(RequestTimeoutError):
        await harness.client.invoke(addr, RemotingCommand.request(BLOCK), timeout=0.2)
    assert conn.pending_count == 0
    harness.release.set()  # the late response arrives and matches nothing
    resp = await harness.client.invoke(addr, RemotingCommand.request(ECHO, {"after": "timeout"}), timeout=5)
    assert resp.ext_fields["after"] == "timeout"
    assert not conn.closed


async def test_server_to_client_requests(harness: Harness) -> None:
    notified: list[RemotingCommand] = []
    got_notify = asyncio.Event()

    async def on_notify(conn: Connection, req: RemotingCommand) -> None:
        notified.append(req)
        got_notify.set()

    async def on_status(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(ResponseCode.SUCCESS, ext_fields={"echo": req.ext_fields["group"]})

    harness.client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
    harness.client.register(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, on_status)
    await harness.client.get_connection(harness.server.address)
    for _ in range(100):
        if harness.server_conns:
            break
        await asyncio.sleep(0.01)
    server_side = harness.server_conns[0]
    await server_side.invoke_oneway(
        RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g1"})
    )
    await asyncio.wait_for(got_notify.wait(), 5)
    assert notified[0].ext_fields == {"consumerGroup": "g1"}
    resp = await server_side.invoke(
        RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"group": "g2"}), timeout=5
    )
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["echo"] == "g2"
    # A code the client has no handler for is answered as a server would.
    resp = await server_side.invoke(RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY), timeout=5)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_unknown_code_gets_request_code_not_supported(harness: Harness) -> None:
    resp = await harness.client.invoke(harness.server.address, RemotingCommand.request(9999), timeout=5)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED == 3
    assert resp.remark == " request type 9999 not supported"


async def test_unknown_code_is_logged_at_info_once_per_code_and_client(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="orbitmq")
    for code in (9998, 9998, 9998, 9997):
        resp = await harness.client.invoke(harness.server.address, RemotingCommand.request(code), timeout=5)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    info = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.INFO and "not supported" in r.getMessage()
    ]
    assert len([m for m in info if "9998" in m]) == 1
    assert len([m for m in info if "9997" in m]) == 1
    debug = [
        r for r in caplog.records if r.levelno == logging.DEBUG and "9998 not supported" in r.getMessage()
    ]
    assert len(debug) == 2  # the repeats are still visible at DEBUG


async def test_unsupported_codes_logged_at_info_up_to_the_servers_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """serverMaxUnsupportedLogged bounds the remembered (code, client) pairs: past it a new pair is
    logged at DEBUG only (with the built-in 4096 all three would be logged at INFO)."""
    caplog.set_level(logging.DEBUG, logger="orbitmq")
    server = RemotingServer(name="limited", limits=ServerLimits(max_unsupported_logged=2))
    await server.start()
    client = RemotingClient(connect_timeout=2.0)
    try:
        for code in (9991, 9992, 9993):
            resp = await client.invoke(server.address, RemotingCommand.request(code), timeout=5)
            assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        await client.close()
        await server.stop()
    info = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.INFO and "not supported" in r.getMessage()
    ]
    assert [code for code in ("9991", "9992", "9993") if any(code in m for m in info)] == ["9991", "9992"]
    assert any("9993 not supported" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


async def test_processor_exception_gets_system_error_with_the_text(harness: Harness) -> None:
    resp = await harness.client.invoke(harness.server.address, RemotingCommand.request(FAIL), timeout=5)
    assert resp.code == ResponseCode.SYSTEM_ERROR == 1
    assert resp.remark is not None and "the processor broke on purpose" in resp.remark


async def test_per_code_limit_answers_system_busy(harness: Harness) -> None:
    addr = harness.server.address
    blocked = [
        asyncio.ensure_future(harness.client.invoke(addr, RemotingCommand.request(LIMITED), timeout=5))
        for _ in range(2)
    ]
    # The two blocked requests must be in the processor before the third arrives.
    for _ in range(200):
        if harness.server._dispatcher.pending(LIMITED) == 2:
            break
        await asyncio.sleep(0.01)
    busy = await harness.client.invoke(addr, RemotingCommand.request(LIMITED), timeout=5)
    assert busy.code == ResponseCode.SYSTEM_BUSY == 2
    assert busy.remark == "[OVERLOAD]system busy, start flow control for a while"
    harness.release.set()
    done = await asyncio.gather(*blocked)
    assert [r.remark for r in done] == ["released", "released"]
    # Other codes were never limited.
    ok = await harness.client.invoke(addr, RemotingCommand.request(ECHO), timeout=5)
    assert ok.code == ResponseCode.SUCCESS


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
async def test_responses_use_the_request_serialization(
    harness: Harness, serialize_type: SerializeType
) -> None:
    addr = harness.server.address
    for code in (ECHO, 9999, FAIL):
        req = RemotingCommand.request(code, {"a": "b"})
        req.serialize_type = serialize_type
        resp = await harness.client.invoke(addr, req, timeout=5)
        assert resp.serialize_type == serialize_type, code


async def _raw_connection_is_closed_by_server(addr: str, payload: bytes) -> bool:
    host, port = addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(payload)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 5)  # EOF when the server closes
        return data == b""
    except ConnectionResetError:
        return True
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(struct.pack(">i", 0x7FFFFFF0) + b"\x00" * 16, id="absurd-length"),
        pytest.param(struct.pack(">i", 2) + b"\x00\x00", id="length-too-small"),
        pytest.param(struct.pack(">ii", 20, 16) + b"{not json at all}", id="garbage-json-header"),
        pytest.param(struct.pack(">ii", 12, 100) + b"\x00" * 8, id="header-longer-than-frame"),
        pytest.param(struct.pack(">ii", 8, 7 << 24) + b"\x00" * 4, id="unknown-serialize-type"),
    ],
)
async def test_broken_frame_closes_only_that_connection(harness: Harness, payload: bytes) -> None:
    addr = harness.server.address
    before = await harness.client.invoke(addr, RemotingCommand.request(ECHO, {"n": "1"}), timeout=5)
    assert before.code == ResponseCode.SUCCESS
    assert await _raw_connection_is_closed_by_server(addr, payload)
    after = await harness.client.invoke(addr, RemotingCommand.request(ECHO, {"n": "2"}), timeout=5)
    assert after.ext_fields["n"] == "2"
    conn = await harness.client.get_connection(addr)
    assert not conn.closed
    assert len(harness.server.connections) == 1


async def test_a_valid_frame_written_byte_by_byte_is_served(harness: Harness) -> None:
    host, port = harness.server.address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        req = RemotingCommand.request(ECHO, {"slow": "yes"})
        for byte in encode_command_bytes(req):
            writer.write(bytes([byte]))
        await writer.drain()
        (length,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))
        frame = await reader.readexactly(length)
        assert b'"slow":"yes"' in frame
    finally:
        writer.close()
        await writer.wait_closed()


async def test_many_concurrent_clients(harness: Harness) -> None:
    addr = harness.server.address
    clients = [RemotingClient() for _ in range(40)]
    try:

        async def run(client_no: int, client: RemotingClient) -> int:
            total = 0
            for i in range(25):
                req = RemotingCommand.request(ECHO, {"c": str(client_no), "i": str(i)})
                resp = await client.invoke(addr, req, timeout=10)
                assert resp.ext_fields == {"c": str(client_no), "i": str(i)}
                total += 1
            return total

        counts = await asyncio.gather(*(run(n, c) for n, c in enumerate(clients)))
        assert counts == [25] * 40
        assert len(harness.server.connections) == 41 or len(harness.server.connections) == 40
    finally:
        await asyncio.gather(*(c.close() for c in clients))


async def _blocking_server() -> tuple[RemotingServer, asyncio.Event]:
    """A started server whose BLOCK requests are answered once the event is set."""
    release = asyncio.Event()
    server = RemotingServer()

    async def block(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await release.wait()
        return RemotingCommand.response(ResponseCode.SUCCESS)

    server.register(BLOCK, block)
    await server.start()
    return server, release


async def test_pending_requests_fail_when_the_server_goes_away() -> None:
    server, release = await _blocking_server()
    client = RemotingClient()
    try:
        conn = await client.get_connection(server.address)
        reasons: list[str | None] = []
        conn.add_close_callback(lambda c: reasons.append(c.close_reason))
        waiting = asyncio.ensure_future(conn.invoke(RemotingCommand.request(BLOCK), timeout=10))
        await asyncio.sleep(0.05)
        await server.stop()
        with pytest.raises(ConnectError):
            await waiting
        assert conn.closed and len(reasons) == 1
        assert conn.pending_count == 0
        # The pool forgets the dead connection; reconnecting to a stopped server fails cleanly.
        with pytest.raises(ConnectError):
            await client.invoke(server.address, RemotingCommand.request(ECHO), timeout=1)
    finally:
        release.set()
        await client.close()
        await server.stop()


async def test_idle_connections_are_closed() -> None:
    server = RemotingServer(idle_timeout=0.2)
    await server.start()
    client = RemotingClient()
    try:
        conn = await client.get_connection(server.address)
        closed = asyncio.Event()
        conn.add_close_callback(lambda c: closed.set())
        await asyncio.wait_for(closed.wait(), 5)
        assert conn.closed
        assert not server.connections
        # The next call reconnects on demand.
        resp = await client.invoke(server.address, RemotingCommand.request(9999), timeout=5)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        await client.close()
        await server.stop()


async def test_invoke_replaces_a_pooled_connection_closed_a_moment_ago(harness: Harness) -> None:
    """A connection closed on this side may still sit in the pool until its close is processed; the
    next invoke must not use it but connect anew."""
    addr = harness.server.address
    conn = await harness.client.get_connection(addr)
    conn.close("closed by the test")
    req = RemotingCommand.request(ECHO, {"k": "v"})
    resp = await harness.client.invoke(addr, req, timeout=5)
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["k"] == "v"
    assert (await harness.client.get_connection(addr)) is not conn


async def test_connect_to_a_closed_port_raises_connect_error() -> None:
    server = RemotingServer()
    await server.start()
    addr = server.address
    await server.stop()
    client = RemotingClient(connect_timeout=1.0)
    try:
        with pytest.raises(ConnectError):
            await client.get_connection(addr)
        with pytest.raises(ConnectError):
            await client.get_connection("not-an-address")
    finally:
        await client.close()


async def test_large_bodies_round_trip_with_flow_control(harness: Harness) -> None:
    addr = harness.server.address
    body = bytes(range(256)) * 16384  # 4 MiB, more than the transport's write buffer limits
    results = await asyncio.gather(
        *(harness.client.invoke(addr, RemotingCommand.request(ECHO, body=body), timeout=20) for _ in range(4))
    )
    assert all(bytes(r.body) == body for r in results)


class Calls:
    """invoke_callback's callbacks: every (key, response, error) they were called with."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, RemotingCommand | None, Exception | None]] = []
        self.changed = asyncio.Event()

    def callback(self, key: int, *, raise_first: bool = False) -> ResponseCallback:
        def called(resp: RemotingCommand | None, error: Exception | None) -> None:
            self.seen.append((key, resp, error))
            self.changed.set()
            if raise_first and len(self.seen) == 1:
                raise RuntimeError("a callback broke on purpose")

        return called

    async def wait_for(self, count: int) -> None:
        while len(self.seen) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 5)


async def test_invoke_callback_calls_back_once_per_response(harness: Harness) -> None:
    addr = harness.server.address
    calls = Calls()
    # No pooled connection yet: nothing is sent and the callback is never called.
    assert not harness.client.invoke_callback(addr, RemotingCommand.request(ECHO), 5, calls.callback(-1))
    conn = await harness.client.get_connection(addr)
    for i in range(200):
        req = RemotingCommand.request(ECHO, {"i": str(i), "spin": str(i % 7)})
        assert harness.client.invoke_callback(addr, req, 5, calls.callback(i, raise_first=True))
    await calls.wait_for(200)
    # A callback that raised (the first one) did not stop the others or close the connection.
    assert sorted(key for key, _, _ in calls.seen) == list(range(200))
    for key, resp, error in calls.seen:
        assert error is None and resp is not None and resp.ext_fields["i"] == str(key)
    assert conn.pending_count == 0 and not conn.closed
    resp = await harness.client.invoke(addr, RemotingCommand.request(ECHO, {"x": "1"}), timeout=5)
    assert resp.ext_fields["x"] == "1"
    assert len(calls.seen) == 200  # nothing called twice


async def test_invoke_callback_times_out_once_and_a_late_answer_is_dropped(harness: Harness) -> None:
    addr = harness.server.address
    conn = await harness.client.get_connection(addr)
    calls = Calls()
    conn.invoke_callback(RemotingCommand.request(BLOCK), 0.2, calls.callback(1))
    await calls.wait_for(1)
    assert calls.seen[0][1] is None and isinstance(calls.seen[0][2], RequestTimeoutError)
    assert conn.pending_count == 0
    harness.release.set()  # the late response comes and matches nothing
    conn.invoke_callback(RemotingCommand.request(ECHO, {"after": "timeout"}), 5, calls.callback(2))
    await calls.wait_for(2)
    assert [key for key, _, _ in calls.seen] == [1, 2] and calls.seen[1][2] is None


async def test_invoke_callback_fails_every_pending_request_once_when_the_connection_is_lost() -> None:
    server, release = await _blocking_server()
    client = RemotingClient()
    calls = Calls()
    try:
        conn = await client.get_connection(server.address)
        for i in range(5):
            conn.invoke_callback(RemotingCommand.request(BLOCK), 10, calls.callback(i))
        assert conn.pending_count == 5
        await server.stop()
        await calls.wait_for(5)
        assert sorted(key for key, _, _ in calls.seen) == list(range(5))
        assert all(resp is None and isinstance(error, ConnectError) for _, resp, error in calls.seen)
        assert conn.closed and conn.pending_count == 0
        with pytest.raises(ConnectError):  # a closed connection refuses at once, calling nothing
            conn.invoke_callback(RemotingCommand.request(BLOCK), 10, calls.callback(99))
        assert not client.invoke_callback(
            server.address, RemotingCommand.request(BLOCK), 10, calls.callback(98)
        )
        await asyncio.sleep(0)
        assert len(calls.seen) == 5
    finally:
        release.set()
        await client.close()
        await server.stop()
