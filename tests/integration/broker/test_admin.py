"""Admin and query requests against a real `orbitmq serve`: topics, subscription groups, offsets
tables, stats, runtime info, broker config, reset offset, consume-by-who, query by key, view by id."""

from __future__ import annotations

import time

import orjson

from orbitmq.protocol import java_json
from orbitmq.protocol.codes import RequestCode, ResponseCode

from .conftest import Raw, messages


async def test_topic_admin_and_stats(raw: Raw) -> None:
    await raw.create_topic("AdminT", queues=2)
    for i in range(3):
        await raw.send("AdminT", b"a%d" % i, queue_id=1, keys=f"key-{i} shared")
    stats = await raw.call(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "AdminT"})
    table = java_json.loads(stats.body_bytes())["offsetTable"]
    by_queue = {_queue_id(k): v for k, v in _items(table)}
    assert by_queue[1]["maxOffset"] == 3 and by_queue[0]["maxOffset"] == 0
    missing = await raw.call(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "NoSuchAdminTopic"})
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST

    await raw.call(
        RequestCode.UPDATE_CONSUMER_OFFSET,
        {"consumerGroup": "adm-g", "topic": "AdminT", "queueId": "1", "commitOffset": "1"},
    )
    consume = await raw.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "adm-g", "topic": "AdminT"})
    entries = {_queue_id(k): v for k, v in _items(java_json.loads(consume.body_bytes())["offsetTable"])}
    assert entries[1] == {
        "brokerOffset": 3,
        "consumerOffset": 1,
        "lastTimestamp": entries[1]["lastTimestamp"],
    }
    assert entries[1]["lastTimestamp"] > 0
    who = await raw.call(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "AdminT"})
    assert "adm-g" in orjson.loads(who.body_bytes())["groupList"]
    all_offsets = orjson.loads((await raw.call(RequestCode.GET_ALL_CONSUMER_OFFSET)).body_bytes())
    assert all_offsets["offsetTable"]["AdminT@adm-g"] == {"1": 1}

    # Reset the group to the start of time: every queue goes back to offset 0 (forced).
    reset = await raw.call(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "AdminT", "group": "adm-g", "timestamp": "0", "isForce": "true"},
    )
    assert reset.code == ResponseCode.SUCCESS
    query = {"consumerGroup": "adm-g", "topic": "AdminT", "queueId": "1"}
    assert (await raw.call(RequestCode.QUERY_CONSUMER_OFFSET, query)).ext_fields["offset"] == "0"

    # Query by key through the index, then view the first hit by its commit-log offset.
    now = int(time.time() * 1000)
    found = await raw.call(
        RequestCode.QUERY_MESSAGE,
        {
            "topic": "AdminT",
            "key": "shared",
            "maxNum": "10",
            "beginTimestamp": str(now - 60_000),
            "endTimestamp": str(now + 60_000),
        },
    )
    hits = messages(found)
    assert sorted(m.body for m in hits) == [b"a0", b"a1", b"a2"]
    view = await raw.call(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(hits[0].commit_log_offset)})
    assert messages(view)[0].body == hits[0].body
    none = await raw.call(
        RequestCode.QUERY_MESSAGE,
        {
            "topic": "AdminT",
            "key": "nope",
            "maxNum": "10",
            "beginTimestamp": "0",
            "endTimestamp": str(now + 60_000),
        },
    )
    assert none.code == ResponseCode.QUERY_NOT_FOUND

    deleted = await raw.call(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "AdminT"})
    assert deleted.code == ResponseCode.SUCCESS
    topics = orjson.loads((await raw.call(RequestCode.GET_ALL_TOPIC_CONFIG)).body_bytes())
    assert "AdminT" not in topics["topicConfigTable"]
    system = orjson.loads((await raw.call(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)).body_bytes())
    assert "SCHEDULE_TOPIC_XXXX" in system["topicList"] and "TBW102" in system["topicList"]
    conflict = await raw.call(
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        {
            "topic": "SCHEDULE_TOPIC_XXXX",
            "defaultTopic": "TBW102",
            "readQueueNums": "1",
            "writeQueueNums": "1",
            "perm": "6",
            "topicFilterType": "SINGLE_TAG",
            "order": "false",
        },
    )
    assert conflict.code == ResponseCode.SYSTEM_ERROR


async def test_subscription_groups_admin(raw: Raw) -> None:
    cfg = {"groupName": "adm-group", "consumeEnable": False, "retryMaxTimes": 3, "retryQueueNums": 2}
    created = await raw.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, orjson.dumps(cfg))
    assert created.code == ResponseCode.SUCCESS
    table = orjson.loads((await raw.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body_bytes())
    group = table["subscriptionGroupTable"]["adm-group"]
    assert group["retryMaxTimes"] == 3 and group["consumeEnable"] is False
    await raw.create_topic("AdmSub", queues=1)
    refused = await raw.pull("AdmSub", 0, 0, group="adm-group")
    assert refused.code == ResponseCode.NO_PERMISSION
    assert (await raw.call(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "adm-group"})).code == 0
    table = orjson.loads((await raw.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body_bytes())
    assert "adm-group" not in table["subscriptionGroupTable"]


async def test_broker_config_and_runtime_info(raw: Raw) -> None:
    config = await raw.call(RequestCode.GET_BROKER_CONFIG)
    assert config.code == ResponseCode.SUCCESS
    assert b"brokerName=broker-a\n" in config.body_bytes()
    assert "counter" in orjson.loads(config.ext_fields["version"])
    updated = await raw.call(RequestCode.UPDATE_BROKER_CONFIG, None, b"defaultQueryMaxNum=7\ncustomKey=abc\n")
    assert updated.code == ResponseCode.SUCCESS
    body = (await raw.call(RequestCode.GET_BROKER_CONFIG)).body_bytes()
    assert b"defaultQueryMaxNum=7\n" in body and b"customKey=abc\n" in body
    info = orjson.loads((await raw.call(RequestCode.GET_BROKER_RUNTIME_INFO)).body_bytes())["table"]
    assert info["brokerVersionDesc"] == "V4_9_7" and int(info["bootTimestamp"]) > 0


def _items(table: object) -> list[tuple[object, dict[str, int]]]:
    if isinstance(table, dict):
        return list(table.items())
    return list(table)  # type: ignore[call-overload]


def _queue_id(key: object) -> int:
    if isinstance(key, dict):
        return int(key["queueId"])
    if isinstance(key, tuple):
        return int(dict(key)["queueId"])
    return int(orjson.loads(str(key))["queueId"])
