"""Server limits without sockets: config keys, the per-turn budget of a connection, in-flight cap."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.protocol.frames import FrameDecoder
from orbitmq.transport.connection import TURN_BUDGET, Connection
from orbitmq.transport.dispatch import Dispatcher
from orbitmq.transport.limits import ServerLimits, server_limits


class PausableTransport(asyncio.Transport):
    def __init__(self, conn: Connection) -> None:
        super().__init__()
        self.conn = conn
        self.written: list[bytes] = []
        self.paused = False
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5555), "sockname": ("127.0.0.1", 9876)}.get(name, default)

    def writelines(self, list_of_data: Any) -> None:
        self.written.append(b"".join(bytes(piece) for piece in list_of_data))

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.conn.connection_lost(None)

    def is_closing(self) -> bool:
        return self.closed

    def answers(self) -> list[RemotingCommand]:
        decoder = FrameDecoder()
        return [decode_command(f) for chunk in self.written for f in decoder.feed(chunk)]


def test_limit_keys_come_from_both_configs() -> None:
    broker = BrokerConfig.from_properties({"serverMaxConnections": "7", "serverMaxExtFields": "9"})
    limits = server_limits(broker)
    assert (limits.max_connections, limits.max_ext_fields) == (7, 9)
    assert "serverMaxInflightPerConnection" in broker.properties()
    assert (
        server_limits(BrokerConfig.from_properties({"serverTurnBudgetMillis": "40"})).turn_budget_millis == 40
    )
    namesrv = NamesrvConfig.from_properties(
        {"serverMaxHeaderSize": "1024", "registerBrokerMaxInflatedSize": "2048"}
    )
    assert server_limits(namesrv).max_header_size == 1024
    assert (
        server_limits(NamesrvConfig.from_properties({"serverTurnBudgetMillis": "40"})).turn_budget_millis
        == 40
    )
    assert namesrv.register_broker_max_inflated_size == 2048
    for config_class in (BrokerConfig, NamesrvConfig):
        config = config_class.from_properties({"serverMaxUnsupportedLogged": "3"})
        assert server_limits(config).max_unsupported_logged == 3
        assert server_limits(config_class()).max_unsupported_logged == 4096
    with pytest.raises(ValueError, match="positive"):
        ServerLimits.from_values({"max_connections": 0})


async def test_a_costly_chunk_is_spread_over_loop_turns_in_order() -> None:
    handled: list[int] = []

    def handler(conn: Connection, request: RemotingCommand) -> None:
        handled.append(request.code)
        time.sleep(TURN_BUDGET * 1.5)  # a request costing more than a turn's budget

    conn = Connection(request_handler=handler)
    transport = PausableTransport(conn)
    conn.connection_made(transport)
    chunk = b"".join(encode_command_bytes(RemotingCommand.request(100 + i)) for i in range(4))
    conn.data_received(chunk)
    assert handled == [100] and transport.paused  # the rest waits; no more reading meanwhile
    # Bytes already on their way still arrive: they queue behind the waiting commands.
    conn.data_received(encode_command_bytes(RemotingCommand.request(200)))
    assert handled == [100]
    for _ in range(10):
        await asyncio.sleep(0)
    assert handled == [100, 101, 102, 103, 200] and not transport.paused


async def test_the_turn_budget_is_the_connections_own() -> None:
    """serverTurnBudgetMillis reaches the connection: with a budget longer than the chunk's cost the
    whole chunk is handled in one turn; with the default it is not (the test above)."""
    handled: list[int] = []

    def handler(conn: Connection, request: RemotingCommand) -> None:
        handled.append(request.code)
        time.sleep(TURN_BUDGET * 1.5)

    conn = Connection(request_handler=handler, turn_budget=60.0)
    transport = PausableTransport(conn)
    conn.connection_made(transport)
    conn.data_received(b"".join(encode_command_bytes(RemotingCommand.request(100 + i)) for i in range(4)))
    assert handled == [100, 101, 102, 103] and not transport.paused


async def test_inflight_requests_per_connection_are_capped() -> None:
    release = asyncio.Event()

    async def slow(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        await release.wait()
        return RemotingCommand.response(ResponseCode.SUCCESS)

    dispatcher = Dispatcher(name="t", max_inflight_per_connection=2)
    dispatcher.register(7, slow)
    conn = Connection(request_handler=dispatcher.handle)
    transport = PausableTransport(conn)
    conn.connection_made(transport)
    for _ in range(3):
        conn.data_received(encode_command_bytes(RemotingCommand.request(7)))
    await asyncio.sleep(0)
    assert [a.code for a in transport.answers()] == [ResponseCode.SYSTEM_BUSY]
    assert conn.inflight == 2
    release.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert conn.inflight == 0
    assert [a.code for a in transport.answers()].count(ResponseCode.SUCCESS) == 2
    await dispatcher.stop()
