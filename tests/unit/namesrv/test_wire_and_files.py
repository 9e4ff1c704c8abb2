"""The namesrv's JSON bodies, registration body forms, kvConfig.json and namesrv.conf parsing."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import orjson
import pytest

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.namesrv import wire
from orbitmq.namesrv.config import NamesrvConfig, decode_properties_text
from orbitmq.namesrv.kv_config import KVConfigManager
from orbitmq.namesrv.route_table import BrokerData, DataVersion, QueueData, TopicConfigEntry, TopicRoute
from orbitmq.protocol import java_json


def sample_route() -> TopicRoute:
    return TopicRoute(
        queue_datas=[QueueData("broker-ä", 4, 4, 6, 0)],
        broker_datas=[BrokerData("C", "broker-ä", {1: "10.0.0.2:10911", 0: "10.0.0.1:10911"})],
        filter_server_table={},
    )


def test_route_fastjson_style_has_unquoted_keys_in_insertion_order() -> None:
    body = wire.encode_topic_route(sample_route(), standard=False)
    assert (
        body
        == (
            '{"brokerDatas":[{"brokerAddrs":{1:"10.0.0.2:10911",0:"10.0.0.1:10911"},"brokerName":"broker-ä",'
            '"cluster":"C"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-ä","perm":6,'
            '"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
        ).encode()
    )
    assert java_json.loads(body)["brokerDatas"][0]["brokerAddrs"] == {
        0: "10.0.0.1:10911",
        1: "10.0.0.2:10911",
    }


def test_route_standard_style_quotes_sorts_and_escapes() -> None:
    route = sample_route()
    route.order_topic_conf = "broker-ä:4"
    body = wire.encode_topic_route(route, standard=True)
    assert body.isascii()
    assert b'"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}' in body
    assert b'"brokerName":"broker-\\u00e4"' in body
    parsed = orjson.loads(body)
    assert list(parsed) == ["brokerDatas", "filterServerTable", "orderTopicConf", "queueDatas"]
    assert parsed["orderTopicConf"] == "broker-ä:4"


def test_cluster_info_is_fastjson_style() -> None:
    body = wire.encode_cluster_info({"b": BrokerData("C", "b", {0: "x:1"})}, {"C": ["b"]})
    assert body == (
        b'{"brokerAddrTable":{"b":{"brokerAddrs":{0:"x:1"},"brokerName":"b","cluster":"C"}},'
        b'"clusterAddrTable":{"C":["b"]}}'
    )


@pytest.mark.parametrize("compressed", [False, True])
def test_registration_round_trip(compressed: bool) -> None:
    configs = {"T": TopicConfigEntry("T", 8, 4, 6), "U": TopicConfigEntry("U", 1, 1, 2)}
    body = wire.encode_registration(DataVersion(123, 9), configs, ["f:1"], compressed=compressed)
    reg = wire.decode_registration(body, compressed=compressed)
    assert reg.data_version == DataVersion(123, 9)
    assert reg.topic_configs == configs
    assert reg.filter_servers == ["f:1"]


def test_registration_from_java_with_fastjson_quirks_and_legacy_wrapper() -> None:
    java = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,"timestamp":5},'
        b'"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",'
        b'"topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}}'
    )
    reg = wire.decode_registration(java, compressed=False)
    assert reg.data_version == DataVersion(5, 2) and reg.topic_configs["T"].write_queue_nums == 4
    legacy = (
        b'{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"L":{"topicName":"L","perm":4}}}'
    )
    reg = wire.decode_registration(legacy, compressed=False)
    assert reg.topic_configs["L"].perm == 4
    empty = wire.decode_registration(b"", compressed=False)
    assert empty.data_version == DataVersion() and empty.topic_configs == {}


@pytest.mark.parametrize(
    ("body", "compressed"),
    [
        (b"{not json", False),
        (b"[1,2]", False),
        (b"not zlib", True),
        (zlib.compress(struct.pack(">i", 1000) + b"{}"), True),
        (
            zlib.compress(
                struct.pack(">i", 2) + b"{}" + struct.pack(">i", 1) + struct.pack(">i", 3) + b"a b"
            ),
            True,
        ),
        (
            b'{"filterServerList":[],"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"x"}}}}',
            False,
        ),
    ],
)
def test_bad_registration_bodies_raise_protocol_errors(body: bytes, compressed: bool) -> None:
    with pytest.raises(RemoteProtocolError):
        wire.decode_registration(body, compressed=compressed)


def test_kv_config_persists_and_falls_back_to_bak(tmp_path: Path) -> None:
    path = tmp_path / "ns" / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.load()
    kv.put("A", "k1", "v1")
    kv.put("A", "k2", "v2")
    kv.delete("A", "k2")
    text = path.read_text()
    assert text.startswith('{\n\t"configTable":{')  # fastjson pretty format
    assert java_json.loads(text) == {"configTable": {"A": {"k1": "v1"}}}
    assert java_json.loads((tmp_path / "ns" / "kvConfig.json.bak").read_bytes()) == {
        "configTable": {"A": {"k1": "v1", "k2": "v2"}}
    }
    path.write_text("")  # torn write: the .bak is used
    again = KVConfigManager(path)
    again.load()
    assert again.get("A", "k1") == "v1" and again.get("A", "k2") == "v2"
    assert again.namespace("missing") is None


def test_namesrv_config_from_properties() -> None:
    props = decode_properties_text(
        "# comment\nlistenPort = 9877\norderMessageEnable=true\nkvConfigPath:/tmp/kv.json\nsomethingElse=1\n"
    )
    config = NamesrvConfig.from_properties(props)
    assert config.listen_port == 9877 and config.order_message_enable is True
    assert config.kv_config_path == "/tmp/kv.json"
    assert config.to_properties()["somethingElse"] == "1"
    with pytest.raises(ValueError, match="listenPort"):
        NamesrvConfig.from_properties({"listenPort": "abc"})
