"""Heartbeats and consumer groups, NOTIFY_CONSUMER_IDS_CHANGED, retry/DLQ, delay levels and orderly locks
against a real `orbitmq serve` (short delay levels "1s 2s 1s 1s" and a 1.5 s lock expiry)."""

from __future__ import annotations

import asyncio
import time

import orjson

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport import Connection, RemotingClient

from .conftest import Raw, messages


async def test_heartbeat_registers_groups_and_retry_topic(raw: Raw) -> None:
    await raw.create_topic("HB", queues=2)
    response = await raw.heartbeat("10.0.0.1@c1", consumer_group="hbg", producer_group="hbp", topics=("HB",))
    assert response.code == ResponseCode.SUCCESS
    assert response.version >= 401  # clients read the broker version from the response
    ids = await raw.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hbg"})
    assert orjson.loads(ids.body_bytes()) == {"consumerIdList": ["10.0.0.1@c1"]}
    topics = orjson.loads((await raw.call(RequestCode.GET_ALL_TOPIC_CONFIG)).body_bytes())
    assert "%RETRY%hbg" in topics["topicConfigTable"]
    conns = await raw.call(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "hbg"})
    assert orjson.loads(conns.body_bytes())["connectionSet"][0]["clientId"] == "10.0.0.1@c1"
    producers = await raw.call(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "hbp"})
    assert producers.code == ResponseCode.SUCCESS
    unregister = await raw.call(
        RequestCode.UNREGISTER_CLIENT, {"clientID": "10.0.0.1@c1", "consumerGroup": "hbg"}
    )
    assert unregister.code == ResponseCode.SUCCESS
    gone = await raw.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "hbg"})
    assert gone.code == ResponseCode.SYSTEM_ERROR and "no consumer" in (gone.remark or "")


async def test_membership_change_notifies_other_consumers(raw: Raw) -> None:
    notified: asyncio.Queue[str] = asyncio.Queue()

    async def on_notify(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        notified.put_nowait(request.ext_fields.get("consumerGroup", ""))
        return None

    first = RemotingClient()
    first.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
    second = RemotingClient()
    try:
        raw_first, raw_second = Raw(first, raw.broker), Raw(second, raw.broker)
        await raw_first.heartbeat("c-first", consumer_group="notify-g", topics=("HB",))
        assert (await asyncio.wait_for(notified.get(), 5)) == "notify-g"  # its own join
        await raw_second.heartbeat("c-second", consumer_group="notify-g", topics=("HB",))
        assert (await asyncio.wait_for(notified.get(), 5)) == "notify-g"
        await second.close()  # the second consumer's connection closes: the first hears of it again
        assert (await asyncio.wait_for(notified.get(), 5)) == "notify-g"
    finally:
        await first.close()
        await second.close()


async def test_send_back_goes_to_retry_after_delay_then_to_dlq(raw: Raw) -> None:
    await raw.create_topic("RetryT", queues=1)
    sent = await raw.send("RetryT", b"retry me", tags="R")
    assert sent.code == ResponseCode.SUCCESS
    original = messages(await raw.pull("RetryT", 0, 0))[0]
    header = {
        "offset": str(original.commit_log_offset),
        "group": "rg",
        "delayLevel": "1",
        "originMsgId": original.msg_id,
        "originTopic": "RetryT",
        "unitMode": "false",
        "maxReconsumeTimes": "1",
    }
    started = time.monotonic()
    back = await raw.call(RequestCode.CONSUMER_SEND_MSG_BACK, header)
    assert back.code == ResponseCode.SUCCESS, back.remark
    retry = None
    for _ in range(60):
        response = await raw.pull("%RETRY%rg", 0, 0, group="rg")
        if response.code == ResponseCode.SUCCESS:
            retry = messages(response)[0]
            break
        await asyncio.sleep(0.1)
    assert retry is not None, "the retry message never arrived"
    assert time.monotonic() - started >= 0.9  # delay level 1 = 1 s
    assert retry.body == b"retry me" and retry.reconsume_times == 1
    assert retry.properties["RETRY_TOPIC"] == "RetryT"
    assert retry.properties["ORIGIN_MESSAGE_ID"] == original.offset_msg_id

    # Reconsumed once already and max is 1: the next give-back lands in the DLQ.
    header["offset"] = str(retry.commit_log_offset)
    back = await raw.call(RequestCode.CONSUMER_SEND_MSG_BACK, header)
    assert back.code == ResponseCode.SUCCESS, back.remark
    dlq = messages(await raw.pull("%DLQ%rg", 0, 0, group="rg"))
    assert dlq[0].body == b"retry me" and dlq[0].reconsume_times == 2


async def test_delay_level_delivers_at_the_right_time(raw: Raw) -> None:
    await raw.create_topic("DelayT", queues=1)
    born_ms = int(time.time() * 1000)
    sent = await raw.send("DelayT", b"later", props={"DELAY": "2"})  # level 2 = 2 s
    assert sent.code == ResponseCode.SUCCESS
    assert (await raw.pull("DelayT", 0, 0)).code == ResponseCode.PULL_NOT_FOUND
    response = None
    for _ in range(10):  # long polls of up to 3 s each: the delivery, however late, ends the loop
        response = await raw.pull("DelayT", 0, 0, suspend_ms=3000, timeout=8)
        if response.code == ResponseCode.SUCCESS:
            break
    assert response is not None and response.code == ResponseCode.SUCCESS, "never delivered"
    msg = messages(response)[0]
    assert msg.body == b"later"
    assert msg.properties["REAL_TOPIC"] == "DelayT"
    # When: the schedule service stored the real-topic copy no earlier than level 2 after the send (its
    # store timestamp, on the broker's clock; no upper bound: a loaded machine may deliver late).
    assert msg.store_timestamp - born_ms >= 1900, msg.store_timestamp - born_ms
    offsets = orjson.loads((await raw.call(RequestCode.GET_ALL_DELAY_OFFSET)).body_bytes())
    assert offsets["offsetTable"]["2"] >= 1


async def test_orderly_locks_expire(raw: Raw) -> None:
    mqs = [{"brokerName": "broker-a", "queueId": q, "topic": "LockT"} for q in range(2)]

    async def lock(client_id: str) -> list[int]:
        body = orjson.dumps({"clientId": client_id, "consumerGroup": "lg", "mqSet": mqs})
        response = await raw.call(RequestCode.LOCK_BATCH_MQ, None, body)
        assert response.code == ResponseCode.SUCCESS
        return sorted(mq["queueId"] for mq in orjson.loads(response.body_bytes())["lockOKMQSet"])

    # rebalanceLockMaxLiveTime=1500 in this test's broker. Only lower bounds on time: a lock may be taken
    # over no earlier than 1.5 s after it was taken (measured from before c1 asked, so generously).
    taken = time.monotonic()
    assert await lock("c1") == [0, 1]
    refused = await lock("c2")
    assert refused == [] or time.monotonic() - taken >= 1.5, refused
    while (got := await lock("c2")) != [0, 1]:
        assert got == [] and time.monotonic() - taken < 15, got
        await asyncio.sleep(0.1)
    assert time.monotonic() - taken >= 1.5
    unlock = orjson.dumps({"clientId": "c2", "consumerGroup": "lg", "mqSet": mqs[:1]})
    assert (await raw.call(RequestCode.UNLOCK_BATCH_MQ, None, unlock)).code == ResponseCode.SUCCESS
    assert await lock("c1") == [0]
