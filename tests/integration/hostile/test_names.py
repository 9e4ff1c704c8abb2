"""Illegal topic and group names against a real `orbitmq serve`, at every entry point (issue 13 point 1).

Every request code that carries a name, in its header or its body, gets SYSTEM_ERROR with RocketMQ's
remark, and nothing appears (or disappears) outside the store directory: the names below would escape
it through `consumequeue/<topic>/` if they reached the store.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import orjson
import pytest

from orbitmq.message.property_string import encode_properties
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_serve
from orbitmq.testing.process import ServerProcess
from orbitmq.testing.requests import long_names, send_ext
from orbitmq.transport import RemotingClient

TOPIC = "NamesTopic"
GROUP = "NamesGroup"

# Each would resolve outside the store root if joined into consumequeue/<name>/ (directly, or after the
# %RETRY% / %DLQ% prefix), or is refused for another reason RocketMQ has.
BAD_TOPICS = {
    "dotdot": "../../escaped_t",
    "slash": "/../../../escaped_t2",
    "newline": "Topic\n",
    "too long": "t" * 128,
    "blank": "   ",
    "unicode": "tópico",
}
BAD_GROUPS = {
    "dotdot": "/../../../escaped_g",
    "newline": "Group\n",
    "too long": "g" * 256,
    "space": "bad group",
}


class World:
    def __init__(self, proc: ServerProcess, workdir: Path) -> None:
        self.proc = proc
        self.workdir = workdir
        self.store = workdir / "store"
        self.client = RemotingClient()

    def outside(self) -> set[str]:
        """Every path under the work directory that is not inside the store, the work directory's
        siblings, and the absolute paths an absolute-looking name would reach."""
        seen: set[str] = set()
        for root, dirs, files in os.walk(self.workdir):
            dirs[:] = [d for d in dirs if Path(root, d) != self.store]
            seen.update(os.path.join(root, n) for n in dirs + files if not n.endswith(".log"))
        seen.update(str(p) for p in self.workdir.parent.iterdir())
        seen.update(p for p in ("/escaped_t", "/escaped_t2", "/escaped_g") if os.path.exists(p))
        return seen


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    workdir = tmp_path_factory.mktemp("hostile-names")
    # A directory a hostile DELETE_TOPIC would try to remove (rmdir of an empty directory).
    (workdir / "victim").mkdir()
    with start_serve(workdir, expect=("namesrv", "broker")) as proc:
        yield proc, workdir


@pytest.fixture
async def world(served: tuple[ServerProcess, Path]) -> AsyncIterator[World]:
    w = World(*served)  # a client per test: each test runs in its own event loop
    try:
        yield w
    finally:
        await w.client.close()


async def invoke(w: World, addr: str, code: int, ext: dict[str, str], body: bytes = b"") -> RemotingCommand:
    return await w.client.invoke(addr, RemotingCommand.request(code, ext, body), 5)


def send_ext_v2(topic: str = TOPIC, group: str = "pg") -> dict[str, str]:
    return send_ext(topic, group=group, properties=encode_properties({"TAGS": "t"}))


def send_ext_v1(topic: str = TOPIC, group: str = "pg") -> dict[str, str]:
    return long_names(send_ext(topic, group=group))


async def physical_offset_of_a_message(w: World) -> int:
    sent = await invoke(w, w.proc.broker_addr, RequestCode.SEND_MESSAGE_V2, send_ext_v2(), b"hello")
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    msg_id = sent.ext_fields["msgId"]
    return int(msg_id[-16:], 16)  # offset message id: host (ip4 + port) then the commit log offset


def header_cases(offset: int) -> list[tuple[str, int, dict[str, str], bytes]]:
    """(label, code, ext with the name placeholder {T} / {G}, body) for every header-borne name."""
    t, g = "{T}", "{G}"
    return [
        ("SEND_MESSAGE topic", RequestCode.SEND_MESSAGE, send_ext_v1(topic=t), b"x"),
        ("SEND_MESSAGE group", RequestCode.SEND_MESSAGE, send_ext_v1(group=g), b"x"),
        ("SEND_MESSAGE_V2 topic", RequestCode.SEND_MESSAGE_V2, send_ext_v2(topic=t), b"x"),
        ("SEND_MESSAGE_V2 group", RequestCode.SEND_MESSAGE_V2, send_ext_v2(group=g), b"x"),
        ("SEND_BATCH_MESSAGE topic", RequestCode.SEND_BATCH_MESSAGE, send_ext_v2(topic=t), b"x"),
        ("SEND_REPLY_MESSAGE_V2 topic", RequestCode.SEND_REPLY_MESSAGE_V2, send_ext_v2(topic=t), b"x"),
        (
            "PULL_MESSAGE topic",
            RequestCode.PULL_MESSAGE,
            {
                "consumerGroup": GROUP,
                "topic": t,
                "queueId": "0",
                "queueOffset": "0",
                "maxMsgNums": "1",
                "sysFlag": "0",
                "commitOffset": "0",
                "suspendTimeoutMillis": "0",
                "subVersion": "0",
                "subscription": "*",
            },
            b"",
        ),
        (
            "CONSUMER_SEND_MSG_BACK group (to DLQ)",
            RequestCode.CONSUMER_SEND_MSG_BACK,
            {"offset": str(offset), "group": g, "delayLevel": "-1"},
            b"",
        ),
        (
            "CONSUMER_SEND_MSG_BACK group (to retry)",
            RequestCode.CONSUMER_SEND_MSG_BACK,
            {"offset": str(offset), "group": g, "delayLevel": "1"},
            b"",
        ),
        (
            "CONSUMER_SEND_MSG_BACK originTopic",
            RequestCode.CONSUMER_SEND_MSG_BACK,
            {"offset": str(offset), "group": GROUP, "delayLevel": "1", "originTopic": t},
            b"",
        ),
        (
            "UPDATE_AND_CREATE_TOPIC",
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            {
                "topic": t,
                "defaultTopic": "TBW102",
                "readQueueNums": "1",
                "writeQueueNums": "1",
                "perm": "6",
                "topicFilterType": "SINGLE_TAG",
            },
            b"",
        ),
        ("DELETE_TOPIC_IN_BROKER", RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": t}, b""),
        ("DELETE_SUBSCRIPTIONGROUP", RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": g}, b""),
        (
            "QUERY_CONSUMER_OFFSET",
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": g, "topic": TOPIC, "queueId": "0"},
            b"",
        ),
        (
            "UPDATE_CONSUMER_OFFSET topic",
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": GROUP, "topic": t, "queueId": "0", "commitOffset": "1"},
            b"",
        ),
        (
            "UPDATE_CONSUMER_OFFSET group",
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": g, "topic": TOPIC, "queueId": "0", "commitOffset": "1"},
            b"",
        ),
        ("GET_MAX_OFFSET", RequestCode.GET_MAX_OFFSET, {"topic": t, "queueId": "0"}, b""),
        ("GET_MIN_OFFSET", RequestCode.GET_MIN_OFFSET, {"topic": t, "queueId": "0"}, b""),
        (
            "SEARCH_OFFSET_BY_TIMESTAMP",
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            {"topic": t, "queueId": "0", "timestamp": "0"},
            b"",
        ),
        (
            "QUERY_MESSAGE",
            RequestCode.QUERY_MESSAGE,
            {"topic": t, "key": "k", "maxNum": "1", "beginTimestamp": "0", "endTimestamp": "1"},
            b"",
        ),
        ("GET_CONSUMER_LIST_BY_GROUP", RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": g}, b""),
        (
            "END_TRANSACTION",
            RequestCode.END_TRANSACTION,
            {
                "producerGroup": g,
                "tranStateTableOffset": "0",
                "commitLogOffset": str(offset),
                "commitOrRollback": "8",
                "msgId": "x",
            },
            b"",
        ),
    ]


def body_cases() -> list[tuple[str, int, dict[str, str], bytes]]:
    """Names in bodies: heartbeat (auto-creates %RETRY%<group>), locks, subscription group configs."""
    heartbeat = {
        "clientID": "hostile@1",
        "consumerDataSet": [
            {
                "groupName": "{G}",
                "consumeType": "CONSUME_PASSIVELY",
                "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                "subscriptionDataSet": [],
                "unitMode": False,
            }
        ],
        "producerDataSet": [],
    }
    heartbeat_sub = {
        "clientID": "hostile@1",
        "consumerDataSet": [
            {
                "groupName": GROUP,
                "subscriptionDataSet": [{"topic": "{T}", "subString": "*"}],
            }
        ],
        "producerDataSet": [],
    }
    producer = {"clientID": "hostile@1", "consumerDataSet": [], "producerDataSet": [{"groupName": "{G}"}]}
    lock_group = {"consumerGroup": "{G}", "clientId": "hostile@1", "mqSet": []}
    lock_topic = {
        "consumerGroup": GROUP,
        "clientId": "hostile@1",
        "mqSet": [{"topic": "{T}", "brokerName": "broker-a", "queueId": 0}],
    }
    group_config = {"groupName": "{G}", "consumeEnable": True, "retryQueueNums": 1, "retryMaxTimes": 16}
    return [
        ("HEART_BEAT consumer group", RequestCode.HEART_BEAT, {}, orjson.dumps(heartbeat)),
        ("HEART_BEAT subscription topic", RequestCode.HEART_BEAT, {}, orjson.dumps(heartbeat_sub)),
        ("HEART_BEAT producer group", RequestCode.HEART_BEAT, {}, orjson.dumps(producer)),
        ("LOCK_BATCH_MQ group", RequestCode.LOCK_BATCH_MQ, {}, orjson.dumps(lock_group)),
        ("LOCK_BATCH_MQ topic", RequestCode.LOCK_BATCH_MQ, {}, orjson.dumps(lock_topic)),
        ("UNLOCK_BATCH_MQ topic", RequestCode.UNLOCK_BATCH_MQ, {}, orjson.dumps(lock_topic)),
        (
            "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            {},
            orjson.dumps(group_config),
        ),
    ]


def fill(ext: dict[str, str], body: bytes, topic: str, group: str) -> tuple[dict[str, str], bytes]:
    filled = {k: v.replace("{T}", topic).replace("{G}", group) for k, v in ext.items()}
    # JSON bodies: the placeholder sits inside a JSON string, so the name goes in JSON-escaped.
    escaped_t = orjson.dumps(topic)[1:-1]
    escaped_g = orjson.dumps(group)[1:-1]
    return filled, body.replace(b"{T}", escaped_t).replace(b"{G}", escaped_g)


def uses(ext: dict[str, str], body: bytes, placeholder: str) -> bool:
    return any(placeholder in v for v in ext.values()) or placeholder.encode() in body


async def test_every_entry_point_refuses_illegal_names_and_nothing_leaves_the_store(world: World) -> None:
    w = world
    addr = w.proc.broker_addr
    created = await invoke(
        w,
        addr,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        {
            "topic": TOPIC,
            "defaultTopic": "TBW102",
            "readQueueNums": "1",
            "writeQueueNums": "1",
            "perm": "6",
            "topicFilterType": "SINGLE_TAG",
        },
    )
    assert created.code == ResponseCode.SUCCESS, created.remark
    offset = await physical_offset_of_a_message(w)
    before = w.outside()
    assert any(p.endswith("victim") for p in before)

    checked = 0
    for label, code, ext, body in header_cases(offset) + body_cases():
        names: list[tuple[str, str, str]] = []  # (kind label, topic, group)
        if uses(ext, body, "{T}"):
            names += [(f"topic {k}", v, GROUP) for k, v in BAD_TOPICS.items()]
        if uses(ext, body, "{G}"):
            names += [(f"group {k}", TOPIC, v) for k, v in BAD_GROUPS.items()]
        assert names, label
        for kind, topic, group in names:
            filled, filled_body = fill(ext, body, topic, group)
            response = await invoke(w, addr, code, filled, filled_body)
            if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                # Not served by this build (yet): whatever registers it later sits behind the guard.
                continue
            assert response.code == ResponseCode.SYSTEM_ERROR, (label, kind, response.code, response.remark)
            remark = response.remark or ""
            assert ("topic" in remark or "group" in remark) and (
                "illegal" in remark or "blank" in remark or "max length" in remark
            ), (label, kind, remark)
            checked += 1
    assert checked > 100

    # The process is alive and nothing appeared or vanished outside the store.
    assert w.proc.is_running()
    assert w.outside() == before
    # The legal names still work.
    assert await physical_offset_of_a_message(w) > offset


async def test_topic_remarks_are_rocketmqs(world: World) -> None:
    w = world
    ext = {"topic": "bad topic", "queueId": "0"}
    got = await invoke(w, w.proc.broker_addr, RequestCode.GET_MAX_OFFSET, ext)
    assert got.code == ResponseCode.SYSTEM_ERROR
    assert got.remark == "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    got = await invoke(
        w, w.proc.broker_addr, RequestCode.GET_MAX_OFFSET, {"topic": "t" * 128, "queueId": "0"}
    )
    assert got.remark == "The specified topic is longer than topic max length."
    # 127 characters is still a topic; 255 still a group.
    got = await invoke(
        w, w.proc.broker_addr, RequestCode.GET_MAX_OFFSET, {"topic": "t" * 127, "queueId": "0"}
    )
    assert got.code == ResponseCode.SUCCESS
    ext = {"consumerGroup": "g" * 255}
    got = await invoke(w, w.proc.broker_addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, ext)
    assert "no consumer for this group" in (got.remark or ""), got.remark  # past the name check


async def test_delete_topic_refuses_system_topics(world: World) -> None:
    got = await invoke(world, world.proc.broker_addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "TBW102"})
    assert got.code == ResponseCode.SYSTEM_ERROR
    assert got.remark == "The topic[TBW102] is conflict with system topic."


def register_body(topics: list[str]) -> bytes:
    table = {
        t: {
            "topicName": t,
            "readQueueNums": 1,
            "writeQueueNums": 1,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "order": False,
        }
        for t in topics
    }
    wrapper = {"topicConfigTable": table, "dataVersion": {"timestamp": 1, "counter": 1}}
    return orjson.dumps({"topicConfigSerializeWrapper": wrapper, "filterServerList": []})


async def test_namesrv_refuses_illegal_names(world: World) -> None:
    w = world
    ns = w.proc.namesrv_addr
    for name in BAD_TOPICS.values():
        for code, ext in (
            (RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": name}),
            (RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": name}),
        ):
            got = await invoke(w, ns, code, ext)
            assert got.code == ResponseCode.SYSTEM_ERROR, (code, name, got.remark)
    # A registration's illegal topic names are dropped; its legal ones are routed.
    ext = {
        "brokerName": "fake-b",
        "brokerAddr": "127.0.0.1:1",
        "clusterName": "FakeCluster",
        "haServerAddr": "127.0.0.1:2",
        "brokerId": "0",
        "compressed": "false",
    }
    body = register_body(["LegalRouted", "../../evil", "nl\n"])
    got = await invoke(w, ns, RequestCode.REGISTER_BROKER, ext, body)
    assert got.code == ResponseCode.SUCCESS, got.remark
    listed = await invoke(w, ns, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {})
    topics = set(orjson.loads(listed.body_bytes())["topicList"])
    assert "LegalRouted" in topics
    assert not {"../../evil", "nl\n"} & topics
    route = await invoke(w, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "LegalRouted"})
    assert route.code == ResponseCode.SUCCESS
