"""Produce and consume through the protocol against a real `orbitmq serve`: send (V1, V2, batch),
pull statuses, tag filtering, long polling, offsets, auto-creation and the nameserver route."""

from __future__ import annotations

import asyncio
import time

import orjson

from orbitmq.message.batch import encode_batch
from orbitmq.message.model import Message
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.testing.requests import send_ext

from .conftest import Raw, messages


async def test_send_v2_v1_and_pull_back(raw: Raw) -> None:
    await raw.create_topic("SendPull", queues=4)
    first = await raw.send("SendPull", b"hello-0", tags="TagA", keys="k0", props={"WAIT": "true", "u": "1"})
    assert first.code == ResponseCode.SUCCESS, first.remark
    ext = first.ext_fields
    assert ext["queueId"] == "0" and ext["queueOffset"] == "0"
    assert len(ext["msgId"]) == 32
    assert ext["MSG_REGION"] == "DefaultRegion" and ext["TRACE_ON"] == "true"
    second = await raw.send("SendPull", b"hello-1", tags="TagB", v1=True)
    assert second.code == ResponseCode.SUCCESS and second.ext_fields["queueOffset"] == "1"

    response = await raw.pull("SendPull", 0, 0)
    msgs = messages(response)
    assert [m.body for m in msgs] == [b"hello-0", b"hello-1"]
    assert msgs[0].properties["CLUSTER"] == "DefaultCluster"
    assert "WAIT" not in msgs[0].properties and msgs[0].properties["u"] == "1"
    assert msgs[0].offset_msg_id == ext["msgId"]
    assert response.ext_fields["nextBeginOffset"] == "2"
    assert response.ext_fields["minOffset"] == "0" and response.ext_fields["maxOffset"] == "2"
    assert response.ext_fields["suggestWhichBrokerId"] == "0"

    tagged = await raw.pull("SendPull", 0, 0, subscription="TagB")
    assert [m.body for m in messages(tagged)] == [b"hello-1"]


async def test_pull_statuses(raw: Raw) -> None:
    await raw.create_topic("PullStatus", queues=2)
    empty = await raw.pull("PullStatus", 1, 0)
    assert empty.code == ResponseCode.PULL_NOT_FOUND
    for i in range(3):
        assert (await raw.send("PullStatus", b"m%d" % i, tags="T1")).code == ResponseCode.SUCCESS
    at_end = await raw.pull("PullStatus", 0, 3)
    assert at_end.code == ResponseCode.PULL_NOT_FOUND
    assert at_end.ext_fields["nextBeginOffset"] == "3"
    beyond = await raw.pull("PullStatus", 0, 50)
    assert beyond.code == ResponseCode.PULL_OFFSET_MOVED
    assert beyond.ext_fields["nextBeginOffset"] == "3"
    no_match = await raw.pull("PullStatus", 0, 0, subscription="Other")
    assert no_match.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert no_match.ext_fields["nextBeginOffset"] == "3"
    bad_queue = await raw.pull("PullStatus", 9, 0)
    assert bad_queue.code == ResponseCode.SYSTEM_ERROR and "queueId[9] is illegal" in (bad_queue.remark or "")
    missing = await raw.pull("NoSuchTopicAnywhere", 0, 0)
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    for key in ("nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"):
        assert key in missing.ext_fields


async def test_batch_send(raw: Raw) -> None:
    await raw.create_topic("Batch", queues=1)
    batch = [Message.create("Batch", f"b{i}", tags="bt") for i in range(5)]
    header = send_ext("Batch", batch=True)
    response = await raw.call(RequestCode.SEND_BATCH_MESSAGE, header, encode_batch(batch))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert len(response.ext_fields["msgId"].split(",")) == 5
    msgs = messages(await raw.pull("Batch", 0, 0))
    assert [m.body for m in msgs] == [f"b{i}".encode() for i in range(5)]
    assert [m.queue_offset for m in msgs] == [0, 1, 2, 3, 4]


async def test_long_polling_wakes_on_a_send(raw: Raw) -> None:
    await raw.create_topic("LongPoll", queues=1)
    # Held for 60 s; the broker reports it held (no sleep-and-hope), then a send must wake it.
    held = asyncio.ensure_future(raw.pull("LongPoll", 0, 0, suspend_ms=60_000, timeout=70))
    for _ in range(200):
        info = await raw.call(RequestCode.GET_BROKER_RUNTIME_INFO)
        if orjson.loads(info.body_bytes())["table"]["heldPullRequests"] == "1":
            break
        assert not held.done(), held.result()
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the pull was never held")
    assert (await raw.send("LongPoll", b"wake up")).code == ResponseCode.SUCCESS
    # The send's arrival answers the held pull before the broker reads its next request (the store
    # dispatches it right after the send's answer left): a request on the same connection that does not
    # touch the store is answered after it. (The hold service's periodic re-check could answer it too,
    # but not between two requests a few hundred µs apart.)
    assert (await raw.call(RequestCode.GET_ALL_TOPIC_CONFIG)).code == ResponseCode.SUCCESS
    assert held.done()
    response = await held
    assert [m.body for m in messages(response)] == [b"wake up"]


async def test_long_polling_times_out_with_not_found(raw: Raw) -> None:
    await raw.create_topic("LongPollTimeout", queues=1)
    started = time.monotonic()
    response = await raw.pull("LongPollTimeout", 0, 0, suspend_ms=400)
    elapsed = time.monotonic() - started
    assert response.code == ResponseCode.PULL_NOT_FOUND
    assert elapsed >= 0.35
    assert "nextBeginOffset" in response.ext_fields


async def test_offsets(raw: Raw) -> None:
    await raw.create_topic("Offsets", queues=2)
    before = int(time.time() * 1000)
    for i in range(4):
        await raw.send("Offsets", b"o%d" % i, queue_id=1)
    q = {"topic": "Offsets", "queueId": "1"}
    assert (await raw.call(RequestCode.GET_MAX_OFFSET, q)).ext_fields["offset"] == "4"
    assert (await raw.call(RequestCode.GET_MIN_OFFSET, q)).ext_fields["offset"] == "0"
    earliest = await raw.call(RequestCode.GET_EARLIEST_MSG_STORETIME, q)
    assert int(earliest.ext_fields["timestamp"]) >= before - 1000
    search = await raw.call(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {**q, "timestamp": str(before - 60_000)})
    assert search.ext_fields["offset"] == "0"

    group = {"consumerGroup": "og", "topic": "Offsets", "queueId": "1"}
    fresh = await raw.call(RequestCode.QUERY_CONSUMER_OFFSET, group)
    assert fresh.code == ResponseCode.SUCCESS and fresh.ext_fields["offset"] == "0"  # queue starts at 0
    update = await raw.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**group, "commitOffset": "3"})
    assert update.code == ResponseCode.SUCCESS
    assert (await raw.call(RequestCode.QUERY_CONSUMER_OFFSET, group)).ext_fields["offset"] == "3"
    # The pull's commit-offset piggyback.
    await raw.pull("Offsets", 1, 3, group="og", commit=True, commit_offset=4)
    assert (await raw.call(RequestCode.QUERY_CONSUMER_OFFSET, group)).ext_fields["offset"] == "4"


async def test_auto_create_from_tbw102_registers_route(raw: Raw) -> None:
    response = await raw.send("AutoCreated", b"x")
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert raw.namesrv is not None
    for _ in range(50):
        route = await raw.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "AutoCreated"}, addr=raw.namesrv)
        if route.code == ResponseCode.SUCCESS:
            break
        await asyncio.sleep(0.1)
    assert route.code == ResponseCode.SUCCESS, route.remark
    body = route.body_bytes()
    assert raw.broker.encode() in body and b'"writeQueueNums":4' in body


async def test_topic_updates_reach_the_next_send(raw: Raw) -> None:
    # The send processor keeps what it read of a topic's config while the table holds the same object:
    # an update (a new object) must be seen by the very next send.
    await raw.create_topic("Updated", queues=2)
    assert (await raw.send("Updated", b"x", queue_id=1)).code == ResponseCode.SUCCESS
    await raw.create_topic("Updated", queues=2, perm=4)  # read only
    refused = await raw.send("Updated", b"x", queue_id=1)
    assert refused.code == ResponseCode.NO_PERMISSION and "forbidden" in (refused.remark or "")
    await raw.create_topic("Updated", queues=1)
    assert (await raw.send("Updated", b"x", queue_id=1)).code == ResponseCode.SYSTEM_ERROR
    assert (await raw.send("Updated", b"x", queue_id=0)).code == ResponseCode.SUCCESS
    await raw.create_topic("Updated", queues=4)
    assert (await raw.send("Updated", b"x", queue_id=3)).code == ResponseCode.SUCCESS


async def test_broker_config_updates_reach_the_next_send(raw: Raw) -> None:
    # The send processor keeps what it reads of the broker config until the config changes.
    await raw.create_topic("ConfigUpdated", queues=1)
    sent = await raw.send("ConfigUpdated", b"x")
    assert sent.code == ResponseCode.SUCCESS and sent.ext_fields["MSG_REGION"] == "DefaultRegion"
    update = RequestCode.UPDATE_BROKER_CONFIG
    try:
        assert (await raw.call(update, None, b"brokerPermission=4\nregionId=elsewhere\n")).code == 0
        refused = await raw.send("ConfigUpdated", b"x")
        assert refused.code == ResponseCode.NO_PERMISSION and "sending message is forbidden" in (
            refused.remark or ""
        )
        assert (await raw.call(update, None, b"brokerPermission=6\n")).code == 0
        sent = await raw.send("ConfigUpdated", b"x")
        assert sent.code == ResponseCode.SUCCESS and sent.ext_fields["MSG_REGION"] == "elsewhere"
    finally:
        assert (await raw.call(update, None, b"brokerPermission=6\nregionId=DefaultRegion\n")).code == 0


async def test_forbidden_and_invalid_topics(raw: Raw) -> None:
    forbidden = await raw.send("SCHEDULE_TOPIC_XXXX", b"x")
    assert forbidden.code == ResponseCode.NO_PERMISSION
    invalid = await raw.send("bad topic!", b"x")
    assert invalid.code == ResponseCode.SYSTEM_ERROR and "illegal" in (invalid.remark or "")
    await raw.create_topic("TwoQueues", queues=2)
    bad_queue = await raw.send("TwoQueues", b"x", queue_id=5)
    assert bad_queue.code == ResponseCode.SYSTEM_ERROR
    empty = await raw.send("TwoQueues", b"")
    assert empty.code == ResponseCode.MESSAGE_ILLEGAL
