"""Processors that are plain functions (transport/dispatch.py): one that returns its answer directly is
answered at once (no coroutine, no Task), one that returns another awaitable is awaited; both keep every
dispatcher rule: the request's opaque and serialization, oneway silence, SYSTEM_ERROR for an exception,
the per-code pending limit, the route's counters. Real server and client on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from orbitmq.protocol.codes import ResponseCode, SerializeType
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport import Connection, RemotingClient, RemotingServer
from orbitmq.transport.dispatch import ProcessorResult

NOW = 1100  # answers with a RemotingCommand
LATER = 1101  # answers with a future resolved on the next loop turns
NOW_LIMITED = 1102  # NOW with a pending limit of 1


class Harness:
    def __init__(self, server: RemotingServer, client: RemotingClient) -> None:
        self.server = server
        self.client = client
        self.calls: list[RemotingCommand] = []


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    server = RemotingServer(name="plain-server")
    client = RemotingClient(connect_timeout=2.0)
    h = Harness(server, client)

    def now(conn: Connection, req: RemotingCommand) -> ProcessorResult:
        h.calls.append(req)
        if req.ext_fields.get("fail"):
            raise ValueError("refused on purpose")
        return RemotingCommand.response(
            ResponseCode.SUCCESS, ext_fields={"echo": req.ext_fields.get("x", "")}
        )

    def later(conn: Connection, req: RemotingCommand) -> ProcessorResult:
        h.calls.append(req)
        future: asyncio.Future[RemotingCommand | None] = asyncio.get_running_loop().create_future()
        answer = RemotingCommand.response(ResponseCode.SUCCESS, remark="later")
        asyncio.get_running_loop().call_later(0.01, future.set_result, answer)
        return future

    server.register(NOW, now)
    server.register(LATER, later)
    server.register(NOW_LIMITED, now, limit=1)
    await server.start()
    try:
        yield h
    finally:
        await client.close()
        await server.stop()


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
async def test_a_returned_answer_goes_out_with_the_request_opaque_and_serialization(
    harness: Harness, serialize_type: SerializeType
) -> None:
    addr = harness.server.address
    requests = []
    for i in range(20):
        req = RemotingCommand.request(NOW, {"x": str(i)})
        req.serialize_type = serialize_type
        requests.append(req)
    answers = await asyncio.gather(*(harness.client.invoke(addr, r, timeout=5) for r in requests))
    for req, answer in zip(requests, answers, strict=True):
        assert answer.code == ResponseCode.SUCCESS
        assert answer.opaque == req.opaque
        assert answer.serialize_type == serialize_type
        assert answer.ext_fields == {"echo": req.ext_fields["x"]}
    stats = harness.server.dispatcher.route_stats()[NOW]
    assert stats.responses == {ResponseCode.SUCCESS: 20}
    assert sum(stats.latency_buckets) == 20


async def test_an_exception_is_system_error_and_oneway_stays_silent(harness: Harness) -> None:
    addr = harness.server.address
    failed = await harness.client.invoke(addr, RemotingCommand.request(NOW, {"fail": "1"}), timeout=5)
    assert failed.code == ResponseCode.SYSTEM_ERROR
    assert failed.remark == "ValueError: refused on purpose"
    await harness.client.invoke_oneway(addr, RemotingCommand.request(NOW, {"x": "oneway"}))
    # the next answer on the connection is this request's, nothing stray before it
    answer = await harness.client.invoke(addr, RemotingCommand.request(NOW, {"x": "after"}), timeout=5)
    assert answer.ext_fields == {"echo": "after"}
    assert [c.ext_fields.get("x") for c in harness.calls] == [None, "oneway", "after"]


async def test_another_awaitable_is_awaited(harness: Harness) -> None:
    addr = harness.server.address
    answers = await asyncio.gather(
        *(harness.client.invoke(addr, RemotingCommand.request(LATER), timeout=5) for _ in range(5))
    )
    assert [(a.code, a.remark) for a in answers] == [(ResponseCode.SUCCESS, "later")] * 5
    assert harness.server.dispatcher.pending(LATER) == 0


async def test_an_answered_request_leaves_the_pending_count(harness: Harness) -> None:
    # limit 1: every request after the first would be SYSTEM_BUSY if an answered one stayed pending
    addr = harness.server.address
    for i in range(5):
        answer = await harness.client.invoke(
            addr, RemotingCommand.request(NOW_LIMITED, {"x": str(i)}), timeout=5
        )
        assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert harness.server.dispatcher.pending(NOW_LIMITED) == 0
