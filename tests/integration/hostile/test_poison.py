"""A delayed message that can never be re-put does not block its delay level (issue 13 point 5).

A consumer group of 200 characters is legal (255 at most) but its retry topic `%RETRY%<group>` is not
(127 at most): CONSUMER_SEND_MSG_BACK parks the message in SCHEDULE_TOPIC_XXXX (RocketMQ accepts it the
same way) and the schedule service can never deliver it. It must be skipped with a log line and a
counter, and a well-formed delayed message behind it at the same level must still arrive.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from orbitmq.message.property_string import encode_properties
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader
from orbitmq.testing.launch import start_serve
from orbitmq.testing.process import ServerProcess
from orbitmq.transport import RemotingClient

TOPIC = "PoisonTopic"


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("poison")
    with start_serve(workdir, messageDelayLevel="1s 2s 3s") as proc:
        yield proc


def send_request(body: bytes, props: dict[str, str]) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="pg", topic=TOPIC, queue_id=0, sys_flag=0, born_timestamp=int(time.time() * 1000)
    )
    ext = header.to_ext_v2()
    ext["i"] = encode_properties(props)
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)


async def pull_bodies(client: RemotingClient, addr: str, offset: int) -> list[bytes]:
    pull = PullMessageRequestHeader(
        consumer_group="poison-check",
        topic=TOPIC,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=4,  # carries its subscription: no heartbeat needed
        commit_offset=0,
        suspend_timeout_millis=0,
        sub_version=0,
        subscription="*",
    )
    got = await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, pull.to_ext()), 5)
    if got.code != ResponseCode.SUCCESS:
        return []
    data = got.body_bytes()
    return [data] if data else []


async def runtime_info(client: RemotingClient, addr: str) -> dict[str, str]:
    got = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}), 5)
    assert got.code == ResponseCode.SUCCESS
    table: dict[str, str] = orjson.loads(got.body_bytes())["table"]
    return table


async def test_a_poison_delayed_message_is_skipped_and_later_ones_flow(serve: ServerProcess) -> None:
    addr = serve.broker_addr
    client = RemotingClient()
    try:
        create = {
            "topic": TOPIC,
            "defaultTopic": "TBW102",
            "readQueueNums": "1",
            "writeQueueNums": "1",
            "perm": "6",
            "topicFilterType": "SINGLE_TAG",
        }
        created = await client.invoke(
            addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5
        )
        assert created.code == ResponseCode.SUCCESS
        first = await client.invoke(addr, send_request(b"plain", {"TAGS": "a"}), 5)
        assert first.code == ResponseCode.SUCCESS, first.remark
        physical = int(first.ext_fields["msgId"][-16:], 16)
        next_offset = int(first.ext_fields["queueOffset"]) + 1

        # The poison: sent back for a legal 200-character group, delay level 1.
        back = {"offset": str(physical), "group": "g" * 200, "delayLevel": "1"}
        sent_back = await client.invoke(
            addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, back), 5
        )
        assert sent_back.code == ResponseCode.SUCCESS, sent_back.remark
        # A healthy delayed message behind it, same level.
        healthy = await client.invoke(addr, send_request(b"after-the-poison", {"DELAY": "1"}), 5)
        assert healthy.code == ResponseCode.SUCCESS, healthy.remark

        deadline = time.monotonic() + 20
        arrived = False
        while time.monotonic() < deadline and not arrived:
            arrived = any(
                b"after-the-poison" in body for body in await pull_bodies(client, addr, next_offset)
            )
            if not arrived:
                await asyncio.sleep(0.2)
        assert arrived, serve.log_tail()
        info = await runtime_info(client, addr)
        assert info["scheduleMessageSkipped"] == "1", info
        assert int(info["scheduleMessageDelivered"]) >= 1
    finally:
        await client.close()
    assert "skipping delayed message" in Path(serve.stderr_path).read_text(encoding="utf-8")
