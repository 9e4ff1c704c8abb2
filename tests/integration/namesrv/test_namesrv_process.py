"""A real `orbitmq namesrv` process, driven with the remoting requests a broker and tools send."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from orbitmq.namesrv.route_table import DataVersion, TopicConfigEntry
from orbitmq.namesrv.wire import encode_registration
from orbitmq.protocol import java_json
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess, ServerStartError, start_broker, start_namesrv
from orbitmq.transport import RemotingClient

MASTER = "127.0.0.1:10911"
MASTER_HA = "127.0.0.1:10912"
SLAVE = "127.0.0.1:20911"
FIRST_VERSION = DataVersion(1, 1)


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    with start_namesrv(tmp_path) as proc:
        yield proc


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    try:
        yield c
    finally:
        await c.close()


def topics(*names: str, queues: int = 4, perm: int = 6) -> dict[str, TopicConfigEntry]:
    return {n: TopicConfigEntry(n, queues, queues, perm) for n in names}


async def register(
    client: RemotingClient,
    namesrv: str,
    *,
    broker_addr: str = MASTER,
    broker_name: str = "broker-a",
    broker_id: int = 0,
    cluster: str = "DefaultCluster",
    ha: str = MASTER_HA,
    topic_configs: dict[str, TopicConfigEntry] | None = None,
    version: DataVersion = FIRST_VERSION,
    compressed: bool = False,
    crc: int | None = None,
) -> RemotingCommand:
    body = encode_registration(version, topic_configs or {}, compressed=compressed)
    ext = {
        "brokerName": broker_name,
        "brokerAddr": broker_addr,
        "clusterName": cluster,
        "haServerAddr": ha,
        "brokerId": str(broker_id),
        "compressed": "true" if compressed else "false",
        "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF if crc is None else crc),
    }
    return await client.invoke(namesrv, RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, body), 5)


async def route(
    client: RemotingClient, namesrv: str, topic: str, *, version: int = 407, standard_only: bool = False
) -> RemotingCommand:
    ext = {"topic": topic}
    if standard_only:
        ext["acceptStandardJsonOnly"] = "true"
    req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext)
    req.version = version
    return await client.invoke(namesrv, req, 5)


async def call(client: RemotingClient, namesrv: str, code: int, **ext: str) -> RemotingCommand:
    return await client.invoke(namesrv, RemotingCommand.request(code, ext), 5)


async def eventually_no_route(client: RemotingClient, addr: str, topic: str, seconds: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        if (await route(client, addr, topic)).code == ResponseCode.TOPIC_NOT_EXIST:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"route of {topic} still present after {seconds}s")


async def test_register_then_route_in_both_json_styles(
    namesrv: ServerProcess, client: RemotingClient
) -> None:
    resp = await register(client, namesrv.address, topic_configs=topics("TopicA", "TopicB"))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert "masterAddr" not in resp.ext_fields  # a master gets no master address back

    standard = await route(client, namesrv.address, "TopicA", version=407)
    assert standard.code == ResponseCode.SUCCESS
    body = bytes(standard.body)
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in body
    parsed = orjson.loads(body)  # strictly standard JSON
    assert parsed["queueDatas"] == [
        {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
    ]
    assert parsed["brokerDatas"][0]["cluster"] == "DefaultCluster"
    assert parsed["filterServerTable"] == {}

    old = await route(client, namesrv.address, "TopicA", version=399)
    old_body = bytes(old.body)
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in old_body  # fastjson: unquoted Long keys
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(old_body)
    assert java_json.loads(old_body)["brokerDatas"][0]["brokerAddrs"] == {0: MASTER}

    asked = await route(client, namesrv.address, "TopicA", version=399, standard_only=True)
    assert bytes(asked.body) == body

    missing = await route(client, namesrv.address, "NoSuchTopic")
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST == 17
    assert missing.remark is not None and "NoSuchTopic" in missing.remark


async def test_compressed_registration_and_crc_check(namesrv: ServerProcess, client: RemotingClient) -> None:
    resp = await register(client, namesrv.address, topic_configs=topics("Zipped", queues=8), compressed=True)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    parsed = orjson.loads(bytes((await route(client, namesrv.address, "Zipped")).body))
    assert parsed["queueDatas"][0]["writeQueueNums"] == 8

    bad = await register(
        client,
        namesrv.address,
        broker_name="broker-b",
        broker_addr="127.0.0.1:30911",
        topic_configs=topics("Other"),
        crc=12345,
    )
    assert bad.code == ResponseCode.SYSTEM_ERROR and bad.remark == "crc32 not match"
    assert (await route(client, namesrv.address, "Other")).code == ResponseCode.TOPIC_NOT_EXIST


async def test_cluster_info_topic_lists_and_system_topics(
    namesrv: ServerProcess, client: RemotingClient
) -> None:
    await register(client, namesrv.address, topic_configs=topics("T1", "T2"))
    await register(
        client,
        namesrv.address,
        broker_name="broker-b",
        broker_addr="127.0.0.1:30911",
        cluster="OtherCluster",
        topic_configs=topics("T3"),
    )
    info = await call(client, namesrv.address, RequestCode.GET_BROKER_CLUSTER_INFO)
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in bytes(info.body)
    cluster_info = java_json.loads(info.body)
    assert cluster_info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"], "OtherCluster": ["broker-b"]}
    assert cluster_info["brokerAddrTable"]["broker-b"]["brokerAddrs"] == {0: "127.0.0.1:30911"}

    all_topics = await call(client, namesrv.address, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    assert sorted(orjson.loads(bytes(all_topics.body))["topicList"]) == ["T1", "T2", "T3"]
    by_cluster = await call(
        client, namesrv.address, RequestCode.GET_TOPICS_BY_CLUSTER, cluster="OtherCluster"
    )
    assert orjson.loads(bytes(by_cluster.body))["topicList"] == ["T3"]
    system = await call(client, namesrv.address, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)
    system_list = orjson.loads(bytes(system.body))
    assert set(system_list["topicList"]) == {"DefaultCluster", "broker-a", "OtherCluster", "broker-b"}
    assert system_list["brokerAddr"] in (MASTER, "127.0.0.1:30911")


async def test_kv_config_survives_a_restart(tmp_path: Path, client: RemotingClient) -> None:
    with start_namesrv(tmp_path, orderMessageEnable=True) as first:
        ok = await call(
            client,
            first.address,
            RequestCode.PUT_KV_CONFIG,
            namespace="ORDER_TOPIC_CONFIG",
            key="OrderTopic",
            value="broker-a:4",
        )
        assert ok.code == ResponseCode.SUCCESS
        await call(client, first.address, RequestCode.PUT_KV_CONFIG, namespace="ns", key="gone", value="x")
        await call(client, first.address, RequestCode.DELETE_KV_CONFIG, namespace="ns", key="gone")
        assert first.stop() == 0
    kv_file = tmp_path / "namesrv" / "kvConfig.json"
    assert java_json.loads(kv_file.read_bytes()) == {
        "configTable": {"ORDER_TOPIC_CONFIG": {"OrderTopic": "broker-a:4"}}
    }

    with start_namesrv(tmp_path, orderMessageEnable=True) as second:
        got = await call(
            client,
            second.address,
            RequestCode.GET_KV_CONFIG,
            namespace="ORDER_TOPIC_CONFIG",
            key="OrderTopic",
        )
        assert got.code == ResponseCode.SUCCESS and got.ext_fields["value"] == "broker-a:4"
        gone = await call(client, second.address, RequestCode.GET_KV_CONFIG, namespace="ns", key="gone")
        assert gone.code == ResponseCode.QUERY_NOT_FOUND
        listing = await call(
            client, second.address, RequestCode.GET_KVLIST_BY_NAMESPACE, namespace="ORDER_TOPIC_CONFIG"
        )
        assert orjson.loads(bytes(listing.body)) == {"table": {"OrderTopic": "broker-a:4"}}
        # orderMessageEnable: the route carries the order conf, and registration returns the namespace.
        reg = await register(client, second.address, topic_configs=topics("OrderTopic"))
        assert orjson.loads(bytes(reg.body)) == {"table": {"OrderTopic": "broker-a:4"}}
        parsed = orjson.loads(bytes((await route(client, second.address, "OrderTopic")).body))
        assert parsed["orderTopicConf"] == "broker-a:4"


async def test_wipe_and_add_write_perm(namesrv: ServerProcess, client: RemotingClient) -> None:
    await register(client, namesrv.address, topic_configs=topics("W1", "W2"))
    wiped = await call(client, namesrv.address, RequestCode.WIPE_WRITE_PERM_OF_BROKER, brokerName="broker-a")
    assert wiped.code == ResponseCode.SUCCESS and wiped.ext_fields["wipeTopicCount"] == "2"
    parsed = orjson.loads(bytes((await route(client, namesrv.address, "W1")).body))
    assert parsed["queueDatas"][0]["perm"] == 4
    added = await call(client, namesrv.address, RequestCode.ADD_WRITE_PERM_OF_BROKER, brokerName="broker-a")
    assert added.ext_fields["addTopicCount"] == "2"
    parsed = orjson.loads(bytes((await route(client, namesrv.address, "W2")).body))
    assert parsed["queueDatas"][0]["perm"] == 6


async def test_delete_topic(namesrv: ServerProcess, client: RemotingClient) -> None:
    await register(client, namesrv.address, topic_configs=topics("Keep", "Drop"))
    resp = await call(client, namesrv.address, RequestCode.DELETE_TOPIC_IN_NAMESRV, topic="Drop")
    assert resp.code == ResponseCode.SUCCESS
    assert (await route(client, namesrv.address, "Drop")).code == ResponseCode.TOPIC_NOT_EXIST
    assert (await route(client, namesrv.address, "Keep")).code == ResponseCode.SUCCESS
    listing = await call(client, namesrv.address, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    assert orjson.loads(bytes(listing.body))["topicList"] == ["Keep"]


async def test_broker_expires_without_heartbeat(tmp_path: Path, client: RemotingClient) -> None:
    with start_namesrv(tmp_path, scanNotActiveBrokerInterval=100, brokerChannelExpiredTime=500) as ns:
        await register(client, ns.address, topic_configs=topics("Expiring"))
        conn = await client.get_connection(ns.address)
        assert (await route(client, ns.address, "Expiring")).code == ResponseCode.SUCCESS
        await eventually_no_route(client, ns.address, "Expiring")
        assert conn.closed  # the namesrv closed the expired broker's channel
        info = java_json.loads((await call(client, ns.address, RequestCode.GET_BROKER_CLUSTER_INFO)).body)
        assert info["brokerAddrTable"] == {} and info["clusterAddrTable"] == {}


async def test_unchanged_query_data_version_keeps_a_broker_alive(
    tmp_path: Path, client: RemotingClient
) -> None:
    with start_namesrv(tmp_path, scanNotActiveBrokerInterval=100, brokerChannelExpiredTime=800) as ns:
        await register(client, ns.address, topic_configs=topics("Alive"), version=DataVersion(7, 3))
        ext = {
            "brokerName": "broker-a",
            "brokerAddr": MASTER,
            "clusterName": "DefaultCluster",
            "brokerId": "0",
        }
        body = orjson.dumps({"counter": 3, "timestamp": 7})
        for _ in range(12):  # 1.2 s of keep-alives, longer than the 0.8 s expiry
            req = RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, ext, body)
            resp = await client.invoke(ns.address, req, 5)
            assert resp.ext_fields["changed"] == "false"
            assert orjson.loads(bytes(resp.body)) == {"counter": 3, "timestamp": 7}
            await asyncio.sleep(0.1)
        assert (await route(client, ns.address, "Alive")).code == ResponseCode.SUCCESS
        req = RemotingCommand.request(
            RequestCode.QUERY_DATA_VERSION, ext, orjson.dumps({"counter": 4, "timestamp": 7})
        )
        assert (await client.invoke(ns.address, req, 5)).ext_fields["changed"] == "true"


async def test_broker_removed_when_its_connection_closes(namesrv: ServerProcess) -> None:
    broker_side = RemotingClient()
    tool = RemotingClient()
    try:
        await register(broker_side, namesrv.address, topic_configs=topics("Gone"))
        assert (await route(tool, namesrv.address, "Gone")).code == ResponseCode.SUCCESS
        await broker_side.close()
        await eventually_no_route(tool, namesrv.address, "Gone", seconds=5)
    finally:
        await broker_side.close()
        await tool.close()


async def test_slave_gets_the_masters_ha_address(namesrv: ServerProcess, client: RemotingClient) -> None:
    early = await register(client, namesrv.address, broker_addr=SLAVE, broker_id=1, ha="127.0.0.1:20912")
    assert "haServerAddr" not in early.ext_fields and "masterAddr" not in early.ext_fields
    await register(client, namesrv.address, topic_configs=topics("HA"))
    slave = await register(
        client,
        namesrv.address,
        broker_addr=SLAVE,
        broker_id=1,
        ha="127.0.0.1:20912",
        topic_configs=topics("Ignored"),
    )
    assert slave.ext_fields["haServerAddr"] == MASTER_HA
    assert slave.ext_fields["masterAddr"] == MASTER
    parsed = orjson.loads(bytes((await route(client, namesrv.address, "HA")).body))
    assert parsed["brokerDatas"][0]["brokerAddrs"] == {"0": MASTER, "1": SLAVE}
    # Only the master's topic configs build queue data.
    assert (await route(client, namesrv.address, "Ignored")).code == ResponseCode.TOPIC_NOT_EXIST
    unreg = await call(
        client,
        namesrv.address,
        RequestCode.UNREGISTER_BROKER,
        brokerName="broker-a",
        brokerAddr=SLAVE,
        clusterName="DefaultCluster",
        brokerId="1",
    )
    assert unreg.code == ResponseCode.SUCCESS
    parsed = orjson.loads(bytes((await route(client, namesrv.address, "HA")).body))
    assert parsed["brokerDatas"][0]["brokerAddrs"] == {"0": MASTER}


async def test_namesrv_config_get_and_update(namesrv: ServerProcess, client: RemotingClient) -> None:
    got = await call(client, namesrv.address, RequestCode.GET_NAMESRV_CONFIG)
    text = bytes(got.body).decode()
    assert "orderMessageEnable=false" in text and "kvConfigPath=" in text
    req = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
    assert (await client.invoke(namesrv.address, req, 5)).code == ResponseCode.SUCCESS
    text = bytes((await call(client, namesrv.address, RequestCode.GET_NAMESRV_CONFIG)).body).decode()
    assert "orderMessageEnable=true" in text
    refused = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/etc/x\n")
    assert (await client.invoke(namesrv.address, refused, 5)).code == ResponseCode.NO_PERMISSION


async def test_bad_requests_get_clear_errors(namesrv: ServerProcess, client: RemotingClient) -> None:
    no_topic = await call(client, namesrv.address, RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert no_topic.code == ResponseCode.SYSTEM_ERROR
    assert no_topic.remark is not None and "the custom field topic is null" in no_topic.remark
    unknown = await call(client, namesrv.address, RequestCode.SEND_MESSAGE)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    garbage = RemotingCommand.request(
        RequestCode.REGISTER_BROKER,
        {"brokerName": "b", "brokerAddr": "x:1", "clusterName": "c", "haServerAddr": "x:2", "brokerId": "0"},
        body=b"{not json",
    )
    resp = await client.invoke(namesrv.address, garbage, 5)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    # The server is still fine.
    assert (
        await call(client, namesrv.address, RequestCode.GET_BROKER_CLUSTER_INFO)
    ).code == ResponseCode.SUCCESS


def test_two_namesrvs_run_side_by_side_and_exit_cleanly(tmp_path: Path) -> None:
    one = start_namesrv(tmp_path, name="ns1")
    two = start_namesrv(tmp_path, name="ns2")
    try:
        assert one.address != two.address
        assert one.is_running() and two.is_running()
    finally:
        codes = [one.stop(), two.stop()]
    assert codes == [0, 0]
    assert "namesrv listening on 127.0.0.1:" in (tmp_path / "ns1.out").read_text()


def test_a_namesrv_that_cannot_start_raises_with_its_log_tail(tmp_path: Path) -> None:
    with pytest.raises(ServerStartError) as info:
        start_namesrv(tmp_path, name="broken", listenPort="not-a-port", timeout=20)
    assert "exited with code 2" in str(info.value)
    assert "listenPort" in str(info.value)  # the stderr tail explains why


def test_kill_is_sigkill(tmp_path: Path) -> None:
    proc = start_namesrv(tmp_path)
    assert proc.kill() == -9
    assert not proc.is_running()


async def test_a_real_broker_registers_and_is_gone_after_it_stops(
    tmp_path: Path, client: RemotingClient
) -> None:
    with start_namesrv(tmp_path) as ns:
        broker = start_broker(tmp_path, ns.address, broker_name="broker-real")
        try:
            deadline = asyncio.get_running_loop().time() + 15
            info: dict[str, Any] = {}
            while asyncio.get_running_loop().time() < deadline:
                info = java_json.loads(
                    (await call(client, ns.address, RequestCode.GET_BROKER_CLUSTER_INFO)).body
                )
                if info["brokerAddrTable"]:
                    break
                await asyncio.sleep(0.1)
            assert info["brokerAddrTable"]["broker-real"]["brokerAddrs"] == {0: broker.broker_addr}
            assert (await route(client, ns.address, "TBW102")).code == ResponseCode.SUCCESS
        finally:
            assert broker.stop() == 0
        await eventually_no_route(client, ns.address, "TBW102", seconds=10)
