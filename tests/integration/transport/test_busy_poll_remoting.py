"""Busy polling over real sockets: a server and a client that poll after each write still answer every
request, are seen polling right after an exchange, and stop by themselves once the window passes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orbitmq.broker.app import BrokerApp
from orbitmq.broker.config import BrokerConfig
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport import Connection, RemotingClient, RemotingServer

ECHO = 1000
WINDOW_US = 50_000  # long enough to be seen polling after an exchange on a busy box


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
        # The answer armed the server's loop and the request the client's (one loop here).
        assert server.busy_poll.polling and client.busy_poll.polling
        await asyncio.sleep(3 * WINDOW_US / 1e6)
        assert not server.busy_poll.polling and not client.busy_poll.polling
    finally:
        await client.close()
        await server.stop()


def test_off_by_default() -> None:
    assert RemotingServer().busy_poll is None and RemotingClient().busy_poll is None
    assert BrokerConfig().server_busy_poll_micros == 0


def test_the_broker_key_sets_its_server_and_a_negative_one_is_refused(tmp_path: Path) -> None:
    conf = {"serverBusyPollMicros": "200", "storePathRootDir": str(tmp_path / "store")}
    app = BrokerApp(BrokerConfig.from_properties(conf))
    assert app.server.busy_poll is not None and app.server.busy_poll.window == pytest.approx(200e-6)
    with pytest.raises(ValueError, match="serverBusyPollMicros"):
        BrokerApp(BrokerConfig.from_properties({"serverBusyPollMicros": "-1"}))
