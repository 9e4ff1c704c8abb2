"""The admin requests behind more mqadmin verbs (broker/processors/admin_tools.py), against a real
`orbitmq serve`: consume time span, clone group offset, producer table, cleanups, and the relay of
GET_CONSUMER_RUNNING_INFO / CONSUME_MESSAGE_DIRECTLY to a consumer client."""

from __future__ import annotations

import orjson

from orbitmq.message.hashing import java_string_hash
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport import Connection, RemotingClient

from .conftest import Raw, messages


async def _commit(raw: Raw, group: str, topic: str, queue_id: int, offset: int) -> None:
    response = await raw.call(
        RequestCode.UPDATE_CONSUMER_OFFSET,
        {"consumerGroup": group, "topic": topic, "queueId": str(queue_id), "commitOffset": str(offset)},
    )
    assert response.code == ResponseCode.SUCCESS


async def _offset(raw: Raw, group: str, topic: str, queue_id: int) -> int | None:
    response = await raw.call(
        RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
    )
    return int(response.ext_fields["offset"]) if response.code == ResponseCode.SUCCESS else None


async def test_consume_time_span(raw: Raw) -> None:
    await raw.create_topic("SpanT", queues=2)
    for i in range(4):
        assert (await raw.send("SpanT", b"s%d" % i, queue_id=0)).code == ResponseCode.SUCCESS
    stored = messages(await raw.pull("SpanT", 0, 0))
    await _commit(raw, "span-g", "SpanT", 0, 2)
    response = await raw.call(RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "SpanT", "group": "span-g"})
    assert response.code == ResponseCode.SUCCESS
    spans = {
        s["messageQueue"]["queueId"]: s for s in orjson.loads(response.body_bytes())["consumeTimeSpanSet"]
    }
    assert set(spans) == {0, 1}
    q0 = spans[0]
    assert q0["minTimeStamp"] == stored[0].store_timestamp
    assert q0["maxTimeStamp"] == stored[3].store_timestamp
    assert q0["consumeTimeStamp"] == stored[1].store_timestamp  # the last consumed one (offset 2 - 1)
    assert q0["delayTime"] >= 0
    assert q0["messageQueue"] == {"brokerName": "broker-a", "queueId": 0, "topic": "SpanT"}
    missing = await raw.call(RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "NoSpanT", "group": "g"})
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST


async def test_clone_group_offset(raw: Raw) -> None:
    await raw.create_topic("CloneT", queues=2)
    await _commit(raw, "clone-src", "CloneT", 0, 5)
    await _commit(raw, "clone-src", "CloneT", 1, 7)
    ext = {"srcGroup": "clone-src", "destGroup": "clone-dst", "topic": "CloneT", "offline": "false"}
    assert (await raw.call(RequestCode.CLONE_GROUP_OFFSET, ext)).code == ResponseCode.SUCCESS
    assert [await _offset(raw, "clone-dst", "CloneT", q) for q in (0, 1)] == [5, 7]
    # an online source group that does not subscribe the topic is skipped unless offline
    await raw.heartbeat("10.0.0.9@clone", consumer_group="clone-on", topics=("OtherT",))
    await _commit(raw, "clone-on", "CloneT", 0, 3)
    ext = {"srcGroup": "clone-on", "destGroup": "clone-dst2", "topic": "CloneT", "offline": "false"}
    assert (await raw.call(RequestCode.CLONE_GROUP_OFFSET, ext)).code == ResponseCode.SUCCESS
    assert await _offset(raw, "clone-dst2", "CloneT", 0) in (None, -1, 0)  # none committed
    ext["offline"] = "true"
    assert (await raw.call(RequestCode.CLONE_GROUP_OFFSET, ext)).code == ResponseCode.SUCCESS
    assert await _offset(raw, "clone-dst2", "CloneT", 0) == 3


async def test_query_consume_queue(raw: Raw) -> None:
    await raw.create_topic("CqT", queues=1)
    for i in range(3):
        assert (await raw.send("CqT", b"c%d" % i, tags="TagX")).code == ResponseCode.SUCCESS
    stored = messages(await raw.pull("CqT", 0, 0))
    ext = {"topic": "CqT", "queueId": "0", "index": "1", "count": "5"}
    body = orjson.loads((await raw.call(RequestCode.QUERY_CONSUME_QUEUE, ext)).body_bytes())
    assert (body["minQueueIndex"], body["maxQueueIndex"]) == (0, 3)
    assert [e["physicOffset"] for e in body["queueData"]] == [m.commit_log_offset for m in stored[1:]]
    assert [e["physicSize"] for e in body["queueData"]] == [m.store_size for m in stored[1:]]
    assert {e["tagsCode"] for e in body["queueData"]} == {java_string_hash("TagX")}
    beyond = await raw.call(RequestCode.QUERY_CONSUME_QUEUE, dict(ext, index="9"))
    assert beyond.code == ResponseCode.SUCCESS and "not exist" in (beyond.remark or "")
    missing = await raw.call(RequestCode.QUERY_CONSUME_QUEUE, dict(ext, queueId="3"))
    assert missing.code == ResponseCode.SYSTEM_ERROR


async def test_all_producer_info(raw: Raw) -> None:
    await raw.heartbeat("10.0.0.7@prod", producer_group="info-pg")
    response = await raw.call(RequestCode.GET_ALL_PRODUCER_INFO)
    data = orjson.loads(response.body_bytes())["data"]
    [info] = data["info-pg"]
    assert info["clientId"] == "10.0.0.7@prod"
    assert info["remoteIP"].startswith("/127.0.0.1:")
    assert info["language"] == "PYTHON" and info["lastUpdateTimestamp"] > 0


async def test_cleanups_keep_what_is_in_use(raw: Raw) -> None:
    await raw.create_topic("KeptT", queues=1)
    assert (await raw.send("KeptT", b"kept")).code == ResponseCode.SUCCESS
    # nothing is older than fileReservedTime (72 h): forcing retention now deletes nothing
    assert (await raw.call(RequestCode.DELETE_EXPIRED_COMMITLOG)).code == ResponseCode.SUCCESS
    # a topic with a config is in use: its consume queue stays
    assert (await raw.call(RequestCode.CLEAN_UNUSED_TOPIC)).code == ResponseCode.SUCCESS
    assert [m.body for m in messages(await raw.pull("KeptT", 0, 0))] == [b"kept"]


async def test_running_info_is_relayed_to_the_consumer(raw: Raw) -> None:
    seen: list[RemotingCommand] = []

    async def on_running_info(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        seen.append(request)
        return RemotingCommand.response(ResponseCode.SUCCESS, None, None, b'{"properties":{}}').response_to(
            request
        )

    consumer = RemotingClient()
    consumer.register(RequestCode.GET_CONSUMER_RUNNING_INFO, on_running_info)
    try:
        await Raw(consumer, raw.broker).heartbeat("10.0.0.8@relay", consumer_group="relay-g", topics=("X",))
        ext = {"consumerGroup": "relay-g", "clientId": "10.0.0.8@relay", "jstackEnable": "false"}
        response = await raw.call(RequestCode.GET_CONSUMER_RUNNING_INFO, ext)
        assert response.code == ResponseCode.SUCCESS and response.body_bytes() == b'{"properties":{}}'
        assert seen and seen[0].ext_fields["clientId"] == "10.0.0.8@relay"
        gone = await raw.call(RequestCode.GET_CONSUMER_RUNNING_INFO, dict(ext, clientId="nobody"))
        assert gone.code == ResponseCode.SYSTEM_ERROR and "not online" in (gone.remark or "")
    finally:
        await consumer.close()
