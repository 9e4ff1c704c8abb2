"""Bounded work per request against a real `orbitmq serve` (issue 13 point 4).

The hostile frames of the issue (a 100k-entry ext map in both header encodings, a 2.4 MB header, a zlib
bomb in REGISTER_BROKER) get a closed connection or an error, more connections than
serverMaxConnections are closed on accept, more held requests on one connection than
serverMaxInflightPerConnection get SYSTEM_BUSY, and a healthy client is served throughout.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import AsyncIterator, Iterator

import pytest

from orbitmq.protocol.codes import RequestCode, ResponseCode, SerializeType
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.testing.launch import start_serve
from orbitmq.testing.process import ServerProcess
from orbitmq.testing.requests import pull_ext, send_ext
from orbitmq.transport import RemotingClient, split_address

TOPIC = "LimitsTopic"
MAX_CONNECTIONS = 24
MAX_INFLIGHT = 4
MAX_INFLATED = 1024 * 1024


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("limits")
    conf = {
        "serverMaxConnections": MAX_CONNECTIONS,
        "serverMaxInflightPerConnection": MAX_INFLIGHT,
        "registerBrokerMaxInflatedSize": MAX_INFLATED,
    }
    with start_serve(workdir, **conf) as proc:
        yield proc


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    try:
        yield c
    finally:
        await c.close()


async def exchange(addr: str, data: bytes, timeout: float = 5.0) -> RemotingCommand | None:
    """Write raw bytes; the response, or None when the server closed the connection."""
    host, port = split_address(addr)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(data)
        await writer.drain()
        prefix = await asyncio.wait_for(reader.readexactly(4), timeout)
        (length,) = struct.unpack(">i", prefix)
        return decode_command(await asyncio.wait_for(reader.readexactly(length), timeout))
    except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError):
        return None
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionResetError, BrokenPipeError):
            pass


def request_bytes(
    code: int, ext: dict[str, str], body: bytes = b"", serialize_type: SerializeType = SerializeType.JSON
) -> bytes:
    cmd = RemotingCommand.request(code, ext, body)
    cmd.serialize_type = serialize_type
    return encode_command_bytes(cmd)


async def healthy(client: RemotingClient, serve: ServerProcess) -> None:
    """A route query to the nameserver and a broker request: both answered."""
    route = await client.invoke(
        serve.namesrv_addr,
        RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}),
        5,
    )
    assert route.code == ResponseCode.SUCCESS, route.remark
    offset = await client.invoke(
        serve.broker_addr,
        RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "TBW102", "queueId": "0"}),
        5,
    )
    assert offset.code == ResponseCode.SUCCESS, offset.remark


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
async def test_hostile_headers_close_the_connection(
    serve: ServerProcess, client: RemotingClient, serialize_type: SerializeType
) -> None:
    await healthy(client, serve)
    huge_map = {f"k{i}": "v" for i in range(100_000)}  # ~1.2 MB: above both limits
    small_big_map = {f"k{i}": "v" for i in range(5_000)}  # under the header size, over the count
    big_value = {"topic": "TBW102", "queueId": "0", "x": "y" * 2_400_000}
    for addr in (serve.broker_addr, serve.namesrv_addr):
        for ext in (huge_map, small_big_map, big_value):
            data = request_bytes(RequestCode.GET_MAX_OFFSET, ext, serialize_type=serialize_type)
            assert await exchange(addr, data) is None
            await healthy(client, serve)
    # the same request with a modest header is answered (a positive control for the closes above)
    ok = request_bytes(RequestCode.GET_MAX_OFFSET, {"topic": "TBW102", "queueId": "0"}, b"", serialize_type)
    answered = await exchange(serve.broker_addr, ok)
    assert answered is not None and answered.code == ResponseCode.SUCCESS


def register_ext() -> dict[str, str]:
    return {
        "brokerName": "bomb-b",
        "brokerAddr": "127.0.0.1:1",
        "clusterName": "BombCluster",
        "haServerAddr": "127.0.0.1:2",
        "brokerId": "0",
        "compressed": "true",
    }


async def test_zlib_bomb_in_register_broker_is_refused(serve: ServerProcess, client: RemotingClient) -> None:
    bomb = zlib.compress(b"\0" * (16 * MAX_INFLATED), 9)  # 16 MiB from ~16 KB
    got = await client.invoke(
        serve.namesrv_addr, RemotingCommand.request(RequestCode.REGISTER_BROKER, register_ext(), bomb), 10
    )
    assert got.code == ResponseCode.SYSTEM_ERROR
    assert "inflates to more than" in (got.remark or ""), got.remark
    await healthy(client, serve)
    listed = await client.invoke(
        serve.namesrv_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {}), 5
    )
    assert b"bomb-b" not in listed.body_bytes()


async def test_connections_beyond_the_cap_are_closed(serve: ServerProcess, client: RemotingClient) -> None:
    await healthy(client, serve)  # the client's own connections are open before the flood
    host, port = split_address(serve.broker_addr)
    streams = []
    try:
        for _ in range(MAX_CONNECTIONS + 8):
            streams.append(await asyncio.open_connection(host, port))

        async def is_closed(reader: asyncio.StreamReader) -> bool:
            try:
                return await asyncio.wait_for(reader.read(1), 1.0) == b""
            except TimeoutError:
                return False  # still open
            except ConnectionResetError:
                return True

        closed = await asyncio.gather(*(is_closed(reader) for reader, _ in streams))
        assert sum(closed) >= 8
        assert not all(closed)
    finally:
        for _, writer in streams:
            writer.close()
    await asyncio.sleep(0.2)
    await healthy(client, serve)  # capacity is back once they are gone


async def test_held_requests_per_connection_are_capped(serve: ServerProcess, client: RemotingClient) -> None:
    created = await client.invoke(
        serve.broker_addr,
        RemotingCommand.request(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            {
                "topic": TOPIC,
                "defaultTopic": "TBW102",
                "readQueueNums": "1",
                "writeQueueNums": "1",
                "perm": "6",
                "topicFilterType": "SINGLE_TAG",
            },
        ),
        5,
    )
    assert created.code == ResponseCode.SUCCESS
    # suspend + subscription: held by long polling while the queue is empty
    pull = pull_ext("held", TOPIC, 0, 0, max_nums=1, sys_flag=2 | 4, suspend_ms=15_000)
    host, port = split_address(serve.broker_addr)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for _ in range(MAX_INFLIGHT + 2):
            writer.write(request_bytes(RequestCode.PULL_MESSAGE, pull))
        await writer.drain()
        # Only the requests past the cap are answered now: SYSTEM_BUSY.
        for _ in range(2):
            (length,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))
            busy = decode_command(await asyncio.wait_for(reader.readexactly(length), 5))
            assert busy.code == ResponseCode.SYSTEM_BUSY, busy.remark
        # Another connection is not affected: its held pull is answered when a message arrives.
        other = asyncio.ensure_future(
            client.invoke(serve.broker_addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, pull), 10)
        )
        await asyncio.sleep(0.2)
        assert not other.done()
        sent = await client.invoke(
            serve.broker_addr,
            RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_ext(TOPIC, born_timestamp=1), b"m"),
            5,
        )
        assert sent.code == ResponseCode.SUCCESS
        answered = await other
        assert answered.code == ResponseCode.SUCCESS
        # The held pulls of the first connection are answered too, which frees its slots.
        for _ in range(MAX_INFLIGHT):
            (length,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))
            done = decode_command(await asyncio.wait_for(reader.readexactly(length), 5))
            assert done.code == ResponseCode.SUCCESS
        writer.write(request_bytes(RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": "0"}))
        (length,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))
        again = decode_command(await asyncio.wait_for(reader.readexactly(length), 5))
        assert again.code == ResponseCode.SUCCESS
    finally:
        writer.close()
