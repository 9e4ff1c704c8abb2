"""Bad input against a real broker (`orbitmq serve`): random and malformed frames, absurd lengths, wrong
types in ext fields, missing required fields, malformed bodies and unknown codes. Each gets an error
response or a closed connection, and a healthy client keeps being served in between and afterwards."""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import orjson
import pytest

from orbitmq.message.property_string import encode_properties
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.testing.launch import start_serve
from orbitmq.testing.process import ServerProcess
from orbitmq.testing.requests import create_topic_ext, pull_ext
from orbitmq.testing.requests import send_ext as send_ext_of
from orbitmq.transport import RemotingClient, split_address

TOPIC = "BadInputTopic"

Outcome = RemotingCommand | Literal["closed", "pending"]


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_serve(tmp_path_factory.mktemp("bad-input"), expect=("namesrv", "broker")) as proc:
        yield proc


CLOSED = "closed"  # the broker closed the connection without answering
PENDING = "pending"  # no answer and the connection still open (allowed only for partial frames)


async def exchange(addr: str, data: bytes, timeout: float = 3.0, *, allow_pending: bool = False) -> Outcome:
    """Write raw bytes; the decoded response, or CLOSED when the broker closed the connection.

    Silence with the connection open is a hang: an AssertionError, unless `allow_pending` (random bytes may
    announce a longer frame than they carry, and then the broker rightly waits for the rest)."""
    host, port = split_address(addr)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(data)
        await writer.drain()
        try:
            prefix = await asyncio.wait_for(reader.readexactly(4), timeout)
        except asyncio.IncompleteReadError as exc:
            assert exc.partial == b"", f"a torn response: {exc.partial!r}"
            return CLOSED
        (length,) = struct.unpack(">i", prefix)
        return decode_command(await asyncio.wait_for(reader.readexactly(length), timeout))
    except (ConnectionResetError, BrokenPipeError):
        return CLOSED
    except TimeoutError:
        if allow_pending:
            return PENDING
        raise AssertionError(f"no answer within {timeout}s and the connection still open") from None
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionResetError, BrokenPipeError):
            pass


def frame(header: bytes, body: bytes = b"", header_type: int = 0) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (header_type << 24) | len(header)) + header + body


def request_bytes(code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> bytes:
    return encode_command_bytes(RemotingCommand.request(code, ext, body))


def send_ext(**overrides: str) -> dict[str, str]:
    return send_ext_of(TOPIC) | overrides


class Healthy:
    """A well-behaved client that must keep working throughout."""

    def __init__(self, client: RemotingClient, addr: str) -> None:
        self.client, self.addr, self.sent = client, addr, 0

    async def check(self) -> None:
        body = b"healthy-%d" % self.sent
        ext = send_ext(i=encode_properties({"TAGS": "ok"}))
        response = await self.client.invoke(
            self.addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body), 5
        )
        assert response.code == ResponseCode.SUCCESS, response.remark
        offset = int(response.ext_fields["queueOffset"])
        self.sent += 1
        pull = pull_ext("healthy", TOPIC, 0, offset, max_nums=1)
        got = await self.client.invoke(self.addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, pull), 5)
        assert got.code == ResponseCode.SUCCESS and body in got.body_bytes()


ERROR_CODES = {
    int(ResponseCode.SYSTEM_ERROR),
    int(ResponseCode.MESSAGE_ILLEGAL),
    int(ResponseCode.NO_PERMISSION),
    int(ResponseCode.TOPIC_NOT_EXIST),
    int(ResponseCode.REQUEST_CODE_NOT_SUPPORTED),
}


async def test_bad_input_gets_errors_and_the_broker_keeps_serving(
    serve: ServerProcess, tmp_path: Path
) -> None:
    addr = serve.broker_addr
    client = RemotingClient()
    try:
        create = create_topic_ext(TOPIC, queues=2)
        created = await client.invoke(
            addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5
        )
        assert created.code == ResponseCode.SUCCESS
        healthy = Healthy(client, addr)
        await healthy.check()

        # --- broken framing: the connection is closed (no response) ---------------------------------
        closed_cases = {
            "absurd length": struct.pack(">i", 0x7FFFFFFF) + b"x" * 64,
            "negative length": struct.pack(">i", -5) + b"x" * 8,
            "length below 4": struct.pack(">i", 2) + b"xx",
            "header longer than frame": struct.pack(">iI", 8, 1000) + b"abcd",
            "garbage JSON header": frame(b"{this is not json"),
            "JSON header not an object": frame(b"[1,2,3]"),
            "unknown serialize type": frame(b"{}", header_type=7),
            "binary header truncated": frame(b"\x00\x0a\x00", header_type=1),
        }
        for name, data in closed_cases.items():
            response = await exchange(addr, data)
            assert response == CLOSED, (name, response)
            await healthy.check()

        rng = random.Random(1234)
        for _ in range(30):
            blob = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300)))
            response = await exchange(addr, blob, timeout=0.5, allow_pending=True)
            assert response in (CLOSED, PENDING) or response.code in ERROR_CODES, response
        await healthy.check()

        # --- well-framed but bad requests: an error response each --------------------------------
        answered = {
            "unknown code": (request_bytes(9999), ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "not supported"),
            "send without fields": (
                request_bytes(RequestCode.SEND_MESSAGE_V2, {}, b"x"),
                ResponseCode.SYSTEM_ERROR,
                "is null",
            ),
            "send with text queue id": (
                request_bytes(RequestCode.SEND_MESSAGE_V2, send_ext(e="abc"), b"x"),
                ResponseCode.SYSTEM_ERROR,
                "not a number",
            ),
            "send with huge timestamp": (
                request_bytes(RequestCode.SEND_MESSAGE_V2, send_ext(g="9" * 40), b"x"),
                ResponseCode.SYSTEM_ERROR,
                "out of range",
            ),
            "malformed batch body": (
                request_bytes(RequestCode.SEND_BATCH_MESSAGE, send_ext(m="true"), b"\x00\x00\x00\x07abc"),
                ResponseCode.MESSAGE_ILLEGAL,
                "batch",
            ),
            "pull without fields": (
                request_bytes(RequestCode.PULL_MESSAGE, {"topic": TOPIC}),
                ResponseCode.SYSTEM_ERROR,
                "is null",
            ),
            "heartbeat garbage body": (
                request_bytes(RequestCode.HEART_BEAT, None, b"\xff\xfe{"),
                ResponseCode.SYSTEM_ERROR,
                "",
            ),
            "heartbeat wrong shape": (
                request_bytes(RequestCode.HEART_BEAT, None, b'{"clientID":"x","consumerDataSet":[5]}'),
                ResponseCode.SYSTEM_ERROR,
                "",
            ),
            "lock garbage body": (
                request_bytes(RequestCode.LOCK_BATCH_MQ, None, b"nope"),
                ResponseCode.SYSTEM_ERROR,
                "",
            ),
            "lock wrong types": (
                request_bytes(
                    RequestCode.LOCK_BATCH_MQ,
                    None,
                    orjson.dumps({"consumerGroup": 1, "clientId": [], "mqSet": "x"}),
                ),
                ResponseCode.SYSTEM_ERROR,
                "",
            ),
            "topic with absurd queue count": (
                request_bytes(
                    RequestCode.UPDATE_AND_CREATE_TOPIC,
                    {
                        **create_topic_ext("Huge", queues=1),
                        "readQueueNums": "1000000000",
                    },
                ),
                ResponseCode.SYSTEM_ERROR,
                "1..1024",
            ),
            "view message at a random offset": (
                request_bytes(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": "123456789"}),
                ResponseCode.SYSTEM_ERROR,
                "",
            ),
            "send back of a non-message offset": (
                request_bytes(
                    RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": "7", "group": "g", "delayLevel": "1"}
                ),
                ResponseCode.SYSTEM_ERROR,
                "",
            ),
            "group config garbage": (
                request_bytes(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, b"[]"),
                ResponseCode.SYSTEM_ERROR,
                "",
            ),
            "broker config bad value": (
                request_bytes(RequestCode.UPDATE_BROKER_CONFIG, None, b"listenPort=abc\n"),
                ResponseCode.SYSTEM_ERROR,
                "listenPort",
            ),
        }
        for name, (data, code, remark_part) in answered.items():
            response = await exchange(addr, data)
            assert isinstance(response, RemotingCommand), (name, response)
            assert response.code == code, (name, response.code, response.remark)
            assert remark_part in (response.remark or ""), (name, response.remark)
            await healthy.check()

        # JSON ext fields with numbers, booleans, nulls, objects (ali-ons sends raw JSON types).
        header = orjson.dumps(
            {
                "code": RequestCode.GET_MAX_OFFSET,
                "flag": 0,
                "language": "JAVA",
                "opaque": 1,
                "version": 121,
                "extFields": {"topic": TOPIC, "queueId": 0, "extra": None, "nested": {"a": 1}, "flag": True},
            }
        )
        response = await exchange(addr, frame(header))
        assert isinstance(response, RemotingCommand) and response.code == ResponseCode.SUCCESS, response
        wrong = orjson.dumps(
            {
                "code": RequestCode.GET_MAX_OFFSET,
                "flag": 0,
                "opaque": 2,
                "extFields": {"topic": ["a"], "queueId": {"x": 1}},
            }
        )
        response = await exchange(addr, frame(wrong))
        # fastjson reads extFields as strings (a list becomes its JSON text), so queueId '{"x":1}' is not
        # a number: an error answer, as for any unparsable number field.
        assert isinstance(response, RemotingCommand), response
        assert response.code == ResponseCode.SYSTEM_ERROR, (response.code, response.remark)
        await healthy.check()
        assert serve.is_running
    finally:
        await client.close()
