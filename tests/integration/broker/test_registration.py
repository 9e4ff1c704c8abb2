"""Topic creation registers only the new topic with the nameservers (RocketMQ's
registerIncrementBrokerData): creating the 1,000th topic must not send the other 999 again.

A real broker process registers with a recording nameserver (a RemotingServer in the test that keeps
every REGISTER_BROKER body and answers SUCCESS), and with a real nameserver, which must keep the topics an
incremental registration does not carry.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import orjson

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_broker, start_serve
from orbitmq.testing.requests import create_topic_ext
from orbitmq.transport import RemotingClient
from orbitmq.transport.connection import Connection
from orbitmq.transport.server import RemotingServer


async def create_topic(client: RemotingClient, broker: str, topic: str) -> None:
    request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_ext(topic, queues=2))
    response = await client.invoke(broker, request, 5.0)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_topic_creation_registers_only_that_topic(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []
    recorder = RemotingServer(name="recording-namesrv")

    async def any_request(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        if request.code == RequestCode.REGISTER_BROKER:
            bodies.append(orjson.loads(request.body_bytes())["topicConfigSerializeWrapper"])
        return RemotingCommand.response(ResponseCode.SUCCESS)

    recorder.register_default(any_request)
    await recorder.start()
    client = RemotingClient(connect_timeout=3.0)
    try:
        with start_broker(tmp_path, recorder.address) as broker:
            await wait_for(lambda: bool(bodies))  # the full registration at start
            at_start = set(bodies[0]["topicConfigTable"])
            assert "TBW102" in at_start and len(at_start) > 1
            seen = len(bodies)
            await create_topic(client, broker.broker_addr, "reg_first")
            await create_topic(client, broker.broker_addr, "reg_second")
            await wait_for(lambda: len(bodies) >= seen + 2)
            first, second = bodies[seen], bodies[seen + 1]
            assert set(first["topicConfigTable"]) == {"reg_first"}
            assert set(second["topicConfigTable"]) == {"reg_second"}
            assert second["topicConfigTable"]["reg_second"]["writeQueueNums"] == 2
            # Each carries the broker's new data version, so a nameserver takes it as a change.
            versions = [b["dataVersion"]["counter"] for b in (bodies[0], first, second)]
            assert versions[0] < versions[1] < versions[2], versions
    finally:
        await client.close()
        await recorder.stop()


async def test_a_real_nameserver_keeps_the_topics_an_increment_leaves_out(tmp_path: Path) -> None:
    client = RemotingClient(connect_timeout=3.0)
    try:
        with start_serve(tmp_path) as serve:
            for topic in ("kept_a", "kept_b", "kept_c"):
                await create_topic(client, serve.broker_addr, topic)
            for topic in ("kept_a", "kept_b", "kept_c"):
                request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
                response = await client.invoke(serve.address, request, 5.0)
                assert response.code == ResponseCode.SUCCESS, (topic, response.remark)
                route = orjson.loads(response.body_bytes())
                assert [q["writeQueueNums"] for q in route["queueDatas"]] == [2]
    finally:
        await client.close()
