"""Busy polling over real sockets: a server and a client that poll after each write still answer every
request, learn a window long enough to catch the answers, stop by themselves once it passes, and stop
polling altogether for answers that come later than their limit. The client library polls by default,
the broker only when configured."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orbitmq.broker.app import BrokerApp
from orbitmq.broker.config import BrokerConfig
from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport import Connection, RemotingClient, RemotingServer
from orbitmq.transport.busy_poll import GROW_START

ECHO = 1000
WINDOW_US = 50_000  # a limit every answer comes within, even on a busy box
SLOW = 1001


async def test_server_and_client_poll_after_writes_and_stop_by_themselves() -> None:
    server = RemotingServer(name="polling-server", busy_poll_micros=WINDOW_US)
    client = RemotingClient(connect_timeout=2.0, busy_poll_us=WINDOW_US)

    async def echo(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(ResponseCode.SUCCESS, ext_fields=req.ext_fields, body=req.body)

    server.register(ECHO, echo)
    await server.start()
    try:
        assert server.busy_poll is not None and client.busy_poll is not None
        for i in range(200):
            req = RemotingCommand.request(ECHO, {"i": str(i)}, body=b"x" * 1024)
            resp = await client.invoke(server.address, req, timeout=5)
            assert (resp.code, resp.ext_fields["i"], bytes(resp.body)) == (
                ResponseCode.SUCCESS,
                str(i),
                b"x" * 1024,
            )
        # Each answer came after the first windows but within the limit: the window grew to catch them
        # (it only grows when data is read, so a connection that did not report its reads stays small).
        assert client.busy_poll.window > GROW_START
        await asyncio.sleep(3 * WINDOW_US / 1e6)
        assert not server.busy_poll.polling and not client.busy_poll.polling
    finally:
        await client.close()
        await server.stop()


async def test_a_client_stops_polling_for_answers_later_than_its_limit() -> None:
    server = RemotingServer(name="slow-server")
    client = RemotingClient(connect_timeout=2.0, busy_poll_us=1_000)

    async def slow(conn: Connection, req: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0.005)  # 5 ms, five times the client's limit: a held pull, a distant broker
        return RemotingCommand.response(ResponseCode.SUCCESS)

    server.register(SLOW, slow)
    await server.start()
    try:
        assert client.busy_poll is not None and client.busy_poll.window == GROW_START
        for _ in range(5):
            resp = await client.invoke(server.address, RemotingCommand.request(SLOW, {}), timeout=5)
            assert resp.code == ResponseCode.SUCCESS
        assert client.busy_poll.window == 0.0
        await client.invoke(server.address, RemotingCommand.request(SLOW, {}), timeout=5)
        assert not client.busy_poll.polling  # no window: the request's write did not start polling
    finally:
        await client.close()
        await server.stop()


def test_the_client_library_polls_by_default_and_servers_do_not() -> None:
    assert RemotingServer().busy_poll is None and RemotingClient().busy_poll is None
    assert BrokerConfig().server_busy_poll_micros == 0
    assert ClientConfig().busy_poll_us == 200.0
    poll = ClientInstance(ClientConfig(namesrv_addrs=["127.0.0.1:1"])).remoting.busy_poll
    assert poll is not None and poll.limit == pytest.approx(200e-6)
    off = ClientInstance(ClientConfig(namesrv_addrs=["127.0.0.1:1"], busy_poll_us=0))
    assert off.remoting.busy_poll is None


def test_the_broker_key_sets_its_server_and_a_negative_one_is_refused(tmp_path: Path) -> None:
    conf = {"serverBusyPollMicros": "200", "storePathRootDir": str(tmp_path / "store")}
    app = BrokerApp(BrokerConfig.from_properties(conf))
    assert app.server.busy_poll is not None and app.server.busy_poll.limit == pytest.approx(200e-6)
    with pytest.raises(ValueError, match="serverBusyPollMicros"):
        BrokerApp(BrokerConfig.from_properties({"serverBusyPollMicros": "-1"}))
