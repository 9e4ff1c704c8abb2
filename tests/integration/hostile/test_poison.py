"""Poison messages (issue 13 point 5).

- A delayed message that can never be re-put does not block its delay level: an 8 KiB message is parked in
  SCHEDULE_TOPIC_XXXX (level 1 = 60 s), then the broker restarts with maxMessageSize=4096 and level 1 = 1 s,
  so the store refuses its re-put for good. It must be skipped with a log line and a counter, and a
  well-formed delayed message behind it at the same level must still arrive.
- CONSUMER_SEND_MSG_BACK for a legal group whose %RETRY% topic would be longer than 127 characters is
  refused with a remark, and no such topic is created (it used to park a message nothing could deliver).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson

from orbitmq.message.property_string import encode_properties
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_serve
from orbitmq.testing.requests import pull_ext, send_ext
from orbitmq.transport import RemotingClient

TOPIC = "PoisonTopic"


def send_request(body: bytes, props: dict[str, str]) -> RemotingCommand:
    ext = send_ext(TOPIC, properties=encode_properties(props))
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)


async def pull_bodies(client: RemotingClient, addr: str, offset: int) -> list[bytes]:
    # sysFlag 4: the pull carries its subscription, no heartbeat needed
    pull = pull_ext("poison-check", TOPIC, 0, offset)
    got = await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, pull), 5)
    if got.code != ResponseCode.SUCCESS:
        return []
    data = got.body_bytes()
    return [data] if data else []


async def runtime_info(client: RemotingClient, addr: str) -> dict[str, str]:
    got = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}), 5)
    assert got.code == ResponseCode.SUCCESS
    table: dict[str, str] = orjson.loads(got.body_bytes())["table"]
    return table


async def create_topic(client: RemotingClient, addr: str) -> None:
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


async def test_a_poison_delayed_message_is_skipped_and_later_ones_flow(tmp_path: Path) -> None:
    client = RemotingClient()
    try:
        with start_serve(tmp_path, messageDelayLevel="60s 2s 3s") as first_run:
            addr = first_run.broker_addr
            await create_topic(client, addr)
            parked = await client.invoke(addr, send_request(b"p" * 8192, {"DELAY": "1"}), 5)
            assert parked.code == ResponseCode.SUCCESS, parked.remark
        with start_serve(tmp_path, messageDelayLevel="1s 2s 3s", maxMessageSize=4096) as serve:
            addr = serve.broker_addr
            # A healthy delayed message behind the poison, same level.
            healthy = await client.invoke(addr, send_request(b"after-the-poison", {"DELAY": "1"}), 5)
            assert healthy.code == ResponseCode.SUCCESS, healthy.remark
            deadline = time.monotonic() + 20
            arrived = False
            while time.monotonic() < deadline and not arrived:
                arrived = any(b"after-the-poison" in body for body in await pull_bodies(client, addr, 0))
                if not arrived:
                    await asyncio.sleep(0.2)
            assert arrived, serve.log_tail()
            info = await runtime_info(client, addr)
            assert info["scheduleMessageSkipped"] == "1", info
            assert int(info["scheduleMessageDelivered"]) >= 1
            log_text = Path(serve.stderr_path).read_text(encoding="utf-8")
    finally:
        await client.close()
    assert "skipping delayed message" in log_text


async def test_send_back_refused_when_the_retry_topic_would_be_too_long(tmp_path: Path) -> None:
    client = RemotingClient()
    try:
        with start_serve(tmp_path) as serve:
            addr = serve.broker_addr
            await create_topic(client, addr)
            first = await client.invoke(addr, send_request(b"plain", {"TAGS": "a"}), 5)
            assert first.code == ResponseCode.SUCCESS, first.remark
            physical = int(first.ext_fields["msgId"][-16:], 16)
            outcomes: dict[int, RemotingCommand] = {}
            for length in (120, 121, 200, 255):  # 120: %RETRY% + 120 = 127, the longest legal topic
                back = {"offset": str(physical), "group": "g" * length, "delayLevel": "1"}
                outcomes[length] = await client.invoke(
                    addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, back), 5
                )
            got = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {}), 5)
            topics = set(orjson.loads(got.body_bytes())["topicConfigTable"])
    finally:
        await client.close()
    assert outcomes[120].code == ResponseCode.SUCCESS, outcomes[120].remark
    assert "%RETRY%" + "g" * 120 in topics
    for length in (121, 200, 255):
        assert outcomes[length].code == ResponseCode.SYSTEM_ERROR
        assert "longer than the topic max length 127" in (outcomes[length].remark or "")
        assert "%RETRY%" + "g" * length not in topics
