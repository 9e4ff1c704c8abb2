"""`orbitmq admin` against a real `orbitmq serve` process: every subcommand runs and its output is checked."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from orbitmq.admin import AdminClient, BlockingAdminClient
from orbitmq.client.lite_pull_consumer import LitePullConsumer
from orbitmq.client.results import ConsumeFromWhere
from orbitmq.message.model import MessageExt
from orbitmq.protocol.bodies import SubscriptionGroupConfig
from orbitmq.testing import ServerProcess

from .conftest import AdminRun, table_rows, unique

pytestmark = pytest.mark.timeout(120)


def create_topic(admin: AdminRun, queues: int = 4) -> str:
    topic = unique("AdminTopic")
    admin.ok("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", str(queues), "-w", str(queues))
    return topic


def send(admin: AdminRun, topic: str, body: str, *extra: str) -> dict[str, object]:
    result: dict[str, object] = admin.json("sendMessage", "-t", topic, "-p", body, *extra)
    assert result["sendStatus"] == "SEND_OK"
    return result


# ---- clusters and brokers --------------------------------------------------------------------


def test_cluster_list_shows_the_broker(admin: AdminRun) -> None:
    out = admin.ok("clusterList")
    assert out.splitlines()[0].split()[:5] == ["#Cluster", "Name", "#Broker", "Name", "#BID"]
    rows = table_rows(out)
    assert [row[:4] for row in rows] == [["DefaultCluster", "broker-a", "0", admin.broker]]
    assert rows[0][4] == "V4_9_7"
    data = admin.json("clusterList", "-c", "DefaultCluster")
    assert data[0]["brokerName"] == "broker-a" and data[0]["runtime"]["brokerVersion"] == "407"
    assert "does not exist" in admin.fails("clusterList", "-c", "NoSuchCluster")


def test_broker_status(admin: AdminRun) -> None:
    out = admin.ok("brokerStatus", "-b", admin.broker)
    pairs = dict(line.split(":", 1) for line in out.splitlines())
    assert pairs["brokerVersionDesc".ljust(len(next(iter(pairs))))].strip() == "V4_9_7"
    data = admin.json("brokerStatus", "-c", "DefaultCluster")
    assert data[admin.broker]["brokerName"] == "broker-a"
    assert "putMessageTimesTotal" in data[admin.broker]


def test_update_broker_config_then_get_broker_config_shows_it(admin: AdminRun) -> None:
    before = admin.json("getBrokerConfig", "-b", admin.broker)[admin.broker]
    assert before["brokerName"] == "broker-a"
    assert before.get("maxMessageSize") != "1234567"
    out = admin.ok("updateBrokerConfig", "-b", admin.broker, "-k", "maxMessageSize", "-v", "1234567")
    assert out.strip() == f"update broker config success, {admin.broker}"
    text = admin.ok("getBrokerConfig", "-c", "DefaultCluster")
    assert f"============{admin.broker}============" in text
    assert any(
        line.split("=", 1)[0].strip() == "maxMessageSize" and line.endswith("= 1234567")
        for line in text.splitlines()
    )


# ---- topics ----------------------------------------------------------------------------------


def test_update_topic_then_topic_list_route_and_status(admin: AdminRun) -> None:
    topic = unique("AdminTopic")
    out = admin.ok("updateTopic", "-b", admin.broker, "-t", topic, "-r", "3", "-w", "5", "-p", "6")
    assert out.splitlines()[0] == f"create topic to {admin.broker} success."
    assert topic in admin.ok("topicList").splitlines()
    assert ["DefaultCluster", topic] in table_rows(admin.ok("topicList", "-c"))

    route_text = admin.ok("topicRoute", "-t", topic)
    assert table_rows(route_text) == [["broker-a", "3", "5", "RW-", "0"]]
    route = admin.json("topicRoute", "-t", topic)
    assert route["queueDatas"][0]["readQueueNums"] == 3 and route["queueDatas"][0]["writeQueueNums"] == 5
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": admin.broker}

    status = admin.json("topicStatus", "-t", topic)
    assert [(q["brokerName"], q["queueId"], q["maxOffset"]) for q in status] == [
        ("broker-a", q, 0) for q in range(5)
    ]

    # updating again (to every master of the cluster) changes the queue numbers
    admin.ok("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2")
    assert table_rows(admin.ok("topicRoute", "-t", topic)) == [["broker-a", "2", "2", "RW-", "0"]]


def test_ordered_topic_writes_the_order_conf_to_the_name_server(admin: AdminRun) -> None:
    topic = unique("OrderTopic")
    admin.ok("updateTopic", "-c", "DefaultCluster", "-t", topic, "-w", "3", "-r", "3", "-o", "true")

    async def order_conf() -> str | None:
        async with AdminClient(admin.namesrv) as client:
            return await client.get_kv_config("ORDER_TOPIC_CONFIG", topic)

    assert asyncio.run(order_conf()) == "broker-a:3"
    admin.ok("updateTopic", "-b", admin.broker, "-t", topic, "-w", "2", "-r", "2", "-o", "true")
    assert asyncio.run(order_conf()) == "broker-a:2"


def test_a_name_server_list_fails_over_to_the_live_one(admin: AdminRun) -> None:
    topic = create_topic(admin)
    admin.namesrv = f"127.0.0.1:1;{admin.namesrv}"
    assert topic in admin.ok("topicList").splitlines()
    assert table_rows(admin.ok("topicRoute", "-t", topic))[0][:3] == ["broker-a", "4", "4"]
    admin.ok("deleteTopic", "-c", "DefaultCluster", "-t", topic)
    assert topic not in admin.ok("topicList").splitlines()


def test_topic_status_shows_offsets_and_last_update(admin: AdminRun) -> None:
    topic = create_topic(admin, queues=2)
    before = int(time.time() * 1000) - 1000
    for i in range(3):
        send(admin, topic, f"m{i}", "-b", "broker-a", "-i", "1")
    rows = table_rows(admin.ok("topicStatus", "-t", topic))
    # (queue 0 was never written: its min offset is not checked, the broker says -1 where RocketMQ says 0)
    assert [(r[0], r[1], r[3]) for r in rows] == [("broker-a", "0", "0"), ("broker-a", "1", "3")]
    assert rows[1][2] == "0"
    assert rows[0][4] == "-" and rows[1][4].startswith(time.strftime("%Y-"))
    status = admin.json("topicStatus", "-t", topic)
    assert status[1]["lastUpdateTimestamp"] >= before


def test_delete_topic_removes_it_from_the_broker_and_the_name_server(admin: AdminRun) -> None:
    topic = create_topic(admin)
    out = admin.ok("deleteTopic", "-c", "DefaultCluster", "-t", topic)
    assert out.splitlines() == [
        f"delete topic [{topic}] from cluster [DefaultCluster] success.",
        f"delete topic [{topic}] from NameServer success.",
    ]
    assert topic not in admin.ok("topicList").splitlines()
    assert f"topic '{topic}' does not exist" in admin.fails("topicRoute", "-t", topic)


def test_unknown_topic_cluster_and_name_server_are_one_line_errors(admin: AdminRun) -> None:
    assert "topic 'NoSuchTopic' does not exist" in admin.fails("topicRoute", "-t", "NoSuchTopic")
    assert "topic 'NoSuchTopic' does not exist" in admin.fails("topicStatus", "-t", "NoSuchTopic")
    assert "cluster 'Nope' does not exist" in admin.fails("updateTopic", "-c", "Nope", "-t", "T1")
    assert "give a broker address (-b) or a cluster name (-c)" in admin.fails("updateTopic", "-t", "T1")
    # a system topic name is refused by the broker: its code name and remark are shown
    assert "answered SYSTEM_ERROR (1)" in admin.fails("updateTopic", "-b", admin.broker, "-t", "TBW102")
    admin.namesrv = "127.0.0.1:1"
    assert "unreachable" in admin.fails("topicList")


# ---- messages --------------------------------------------------------------------------------


def test_send_message_then_query_by_id_key_and_offset(admin: AdminRun) -> None:
    topic = create_topic(admin)
    key = unique("key-")
    sent = send(admin, topic, "hello admin", "-k", f"{key} other", "-c", "TagA", "-b", "broker-a", "-i", "2")
    assert (sent["brokerName"], sent["queueId"], sent["queueOffset"]) == ("broker-a", 2, 0)
    offset_id, uniq_key = str(sent["offsetMsgId"]), str(sent["msgId"])

    # the offset message id names the broker and the commit log position
    by_id = admin.ok("queryMsgById", "-i", offset_id)
    pairs = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in by_id.splitlines())}
    assert pairs["Topic"] == topic and pairs["Tags"] == "[TagA]" and pairs["Message Body"] == "hello admin"
    assert pairs["OffsetID"] == offset_id and pairs["Queue ID"] == "2"

    # a client id (UNIQ_KEY) is looked up in the key index of the topic
    [msg] = admin.json("queryMsgById", "-i", uniq_key, "-t", topic)
    assert (msg["msgId"], msg["offsetMsgId"], msg["body"]) == (uniq_key, offset_id, "hello admin")
    assert "give -t TOPIC" in admin.fails("queryMsgById", "-i", uniq_key)

    rows = table_rows(admin.ok("queryMsgByKey", "-t", topic, "-k", key))
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [(uniq_key, "2", "0", offset_id)]
    assert table_rows(admin.ok("queryMsgByKey", "-t", topic, "-k", "no-such-key")) == []

    one = admin.json("queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", "2", "-o", "0")
    assert (one["msgId"], one["keys"], one["tags"], one["brokerName"]) == (
        uniq_key,
        f"{key} other",
        "TagA",
        "broker-a",
    )
    assert "no message at offset 5" in admin.fails(
        "queryMsgByOffset", "-t", topic, "-b", "broker-a", "-i", "2", "-o", "5"
    )
    assert "does not serve topic" in admin.fails(
        "queryMsgByOffset", "-t", topic, "-b", "broker-x", "-i", "0", "-o", "0"
    )


def test_consume_message_prints_a_bounded_number_of_messages(admin: AdminRun) -> None:
    topic = create_topic(admin, queues=2)
    for i in range(5):
        send(admin, topic, f"body-{i}", "-b", "broker-a", "-i", str(i % 2))
    out = admin.ok("consumeMessage", "-t", topic)
    assert out.strip().endswith("Consumed 5 messages")
    rows = table_rows(out)
    assert sorted(r[7] for r in rows) == [f"body-{i}" for i in range(5)]
    assert [(r[0], r[1], r[2]) for r in rows][:3] == [
        ("broker-a", "0", "0"),
        ("broker-a", "0", "1"),
        ("broker-a", "0", "2"),
    ]
    limited = admin.json("consumeMessage", "-t", topic, "-c", "2")
    assert len(limited) == 2
    one_queue = admin.json("consumeMessage", "-t", topic, "-b", "broker-a", "-i", "1", "-o", "1")
    assert [m["body"] for m in one_queue] == ["body-3"]
    # consuming does not commit anything: the tools group is still at offset 0 everywhere
    progress = admin.json("consumerProgress", "-g", "TOOLS_CONSUMER", "-t", topic)
    assert [q["consumerOffset"] for q in progress["queues"]] == [0, 0] and progress["diffTotal"] == 5
    assert "no consume stats for group 'NeverUsedGroup'" in admin.fails(
        "consumerProgress", "-g", "NeverUsedGroup"
    )


def test_consume_message_from_a_store_time(admin: AdminRun) -> None:
    topic = create_topic(admin, queues=1)
    send(admin, topic, "early", "-b", "broker-a", "-i", "0")
    time.sleep(0.02)  # store timestamps are milliseconds: keep the two messages apart
    send(admin, topic, "late", "-b", "broker-a", "-i", "0")
    [early, late] = admin.json("consumeMessage", "-t", topic)
    assert late["storeTimestamp"] > early["storeTimestamp"]
    after = admin.json("consumeMessage", "-t", topic, "-s", str(late["storeTimestamp"]))
    assert [m["body"] for m in after] == ["late"]
    before = admin.json("consumeMessage", "-t", topic, "-e", str(early["storeTimestamp"]))
    assert [m["body"] for m in before] == ["early"]


# ---- groups, progress, resets ------------------------------------------------------------------


async def consume_all(namesrv: str, group: str, topic: str, expected: int) -> list[MessageExt]:
    consumer = LitePullConsumer(
        group, namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, auto_commit=False
    )
    consumer.subscribe(topic, "*")
    got: dict[tuple[int, int], MessageExt] = {}  # at-least-once: a redelivery is not a new message
    async with consumer:
        deadline = time.monotonic() + 20
        while len(got) < expected and time.monotonic() < deadline:
            for msg in await consumer.poll(0.5):
                got[msg.queue_id, msg.queue_offset] = msg
        await consumer.commit()
    return list(got.values())


def test_consumer_progress_lag_drops_after_consuming_and_reset_moves_offsets(admin: AdminRun) -> None:
    topic = create_topic(admin, queues=2)
    group = unique("AdminGroup")
    admin.ok("updateSubGroup", "-c", "DefaultCluster", "-g", group)
    for i in range(4):
        send(admin, topic, f"lag-{i}", "-b", "broker-a", "-i", str(i % 2))

    # no offsets yet: with -t the broker counts the group at offset 0 of every queue (as RocketMQ does)
    assert admin.json("consumerProgress", "-g", group, "-t", topic)["diffTotal"] == 4
    # reset to the beginning creates offsets 0: the lag is every message
    reset = admin.json("resetOffsetByTime", "-g", group, "-t", topic, "-s", "0")
    assert [(o["queueId"], o["offset"]) for o in reset["offsets"]] == [(0, 0), (1, 0)]
    out = admin.ok("consumerProgress", "-g", group, "-t", topic)
    assert [[*r[:5], r[6]] for r in table_rows(out)] == [
        [topic, "broker-a", "0", "2", "0", "2"],
        [topic, "broker-a", "1", "2", "0", "2"],
    ]
    assert out.strip().endswith("Diff Total: 4")

    consumed = asyncio.run(consume_all(admin.namesrv, group, topic, 4))
    assert sorted(bytes(m.body).decode() for m in consumed) == [f"lag-{i}" for i in range(4)]
    progress = admin.json("consumerProgress", "-g", group)
    assert progress["diffTotal"] == 0
    assert [(q["queueId"], q["consumerOffset"], q["diff"]) for q in progress["queues"]] == [
        (0, 2, 0),
        (1, 2, 0),
    ]
    all_groups = {row[0]: row for row in table_rows(admin.ok("consumerProgress"))}
    assert all_groups[group][3] == "0"

    # reset by time: to the beginning again, then past the last message, then to the end (-1)
    out = admin.ok("resetOffsetByTime", "-g", group, "-t", topic, "-s", "0")
    assert table_rows(out.split("\n", 1)[1]) == [["broker-a", "0", "0"], ["broker-a", "1", "0"]]
    assert admin.json("consumerProgress", "-g", group, "-t", topic)["diffTotal"] == 4
    admin.ok("resetOffsetByTime", "-g", group, "-t", topic, "-s", str(int(time.time() * 1000) + 60_000))
    # a time after the last message finds the last message of each queue (ConsumeQueue's search)
    progress = admin.json("consumerProgress", "-g", group, "-t", topic)
    assert [q["consumerOffset"] for q in progress["queues"]] == [1, 1]
    admin.ok("resetOffsetByTime", "-g", group, "-t", topic, "-s", "-1")
    assert admin.json("consumerProgress", "-g", group, "-t", topic)["diffTotal"] == 0


def test_consumer_connection_lists_an_online_consumer(admin: AdminRun) -> None:
    topic = create_topic(admin, queues=1)
    group = unique("AdminOnline")
    assert f"the consumer group '{group}' is not online" in admin.fails("consumerConnection", "-g", group)

    async def scenario() -> tuple[str, str]:
        consumer = LitePullConsumer(group, admin.namesrv)
        consumer.subscribe(topic, "TagA || TagB")
        async with consumer:
            deadline = time.monotonic() + 15
            while True:
                # main() runs its own event loop: call it from a thread, not from this loop
                rc, out, err = await asyncio.to_thread(admin, "consumerConnection", "-g", group)
                if rc == 0 or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert rc == 0, err
            progress = await asyncio.to_thread(
                admin.ok, "consumerProgress", "-g", group, "-t", topic, "-s", "true"
            )
            return out, progress

    out, progress = asyncio.run(scenario())
    clients = table_rows(out)
    assert len(clients) == 1 and clients[0][2] == "PYTHON"
    # -s true: with one online client, its address is shown for every queue
    assert [row[5] for row in table_rows(progress)] == [clients[0][1]]
    assert [topic, "TagA || TagB"] in [
        line.split(None, 1) for line in out.split("Below is subscription:")[1].splitlines()[2:3]
    ]
    assert "ConsumeType: CONSUME_ACTIVELY" in out and "MessageModel: CLUSTERING" in out


def test_update_and_delete_subscription_group(admin: AdminRun, serve: ServerProcess) -> None:
    group = unique("AdminSub")
    out = admin.ok("updateSubGroup", "-b", admin.broker, "-g", group, "-r", "5", "-q", "2", "-s", "false")
    assert out.splitlines()[0] == f"create subscription group to {admin.broker} success."

    async def groups() -> dict[str, SubscriptionGroupConfig]:
        async with AdminClient(admin.namesrv) as client:
            return dict(await client.subscription_groups(admin.broker))

    config = asyncio.run(groups())[group]
    assert (config.retry_max_times, config.retry_queue_nums, config.consume_enable) == (5, 2, False)
    out = admin.ok("deleteSubGroup", "-c", "DefaultCluster", "-g", group)
    assert out.strip() == f"delete subscription group [{group}] from broker [{admin.broker}] success."
    assert group not in asyncio.run(groups())


# ---- entry point and blocking client -----------------------------------------------------------


def test_python_dash_m_entry_point(serve: ServerProcess) -> None:
    ns = serve.addresses["namesrv"]
    ok = subprocess.run(
        [sys.executable, "-m", "orbitmq", "admin", "clusterList", "-n", ns],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert serve.addresses["broker"] in ok.stdout and "DefaultCluster" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "orbitmq", "admin", "topicRoute", "-n", ns, "-t", "NoSuchTopicHere"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 1
    assert bad.stderr.strip() == (
        "orbitmq admin topicRoute: error: "
        "topic 'NoSuchTopicHere' does not exist (the name server has no route for it)"
    )


def test_blocking_admin_client(serve: ServerProcess) -> None:
    topic = unique("BlockingTopic")
    with BlockingAdminClient(serve.addresses["namesrv"]) as admin:
        assert admin.update_topic(topic, cluster="DefaultCluster", read_queue_nums=2, write_queue_nums=2) == [
            serve.addresses["broker"]
        ]
        assert topic in admin.topic_list()
        assert [q.queue_id for q in admin.topic_status(topic)] == [0, 1]
