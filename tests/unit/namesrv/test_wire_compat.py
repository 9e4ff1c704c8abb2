"""The namesrv's own wire forms agree with the protocol layer's body classes (used by clients, brokers)."""

from __future__ import annotations

import pytest

from orbitmq.namesrv import wire
from orbitmq.namesrv.route_table import BrokerData, DataVersion, QueueData, TopicConfigEntry, TopicRoute
from orbitmq.protocol import bodies


@pytest.mark.parametrize("standard", [True, False])
def test_route_bodies_decode_with_the_protocol_classes(standard: bool) -> None:
    route = TopicRoute(
        queue_datas=[QueueData("b", 4, 2, 6, 0)],
        broker_datas=[BrokerData("C", "b", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"})],
        filter_server_table={},
        order_topic_conf="b:2",
    )
    decoded = bodies.TopicRouteData.from_json(wire.encode_topic_route(route, standard=standard))
    assert decoded.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert decoded.queue_datas[0].write_queue_nums == 2 and decoded.queue_datas[0].read_queue_nums == 4
    assert decoded.order_topic_conf == "b:2"
    if standard:  # byte-identical to the protocol layer's standard encoding
        assert decoded.to_json(standard=True) == wire.encode_topic_route(route, standard=True)


def test_cluster_info_decodes_with_the_protocol_class() -> None:
    body = wire.encode_cluster_info({"b": BrokerData("C", "b", {0: "x:1"})}, {"C": ["b"]})
    info = bodies.ClusterInfo.from_json(body)
    assert info.broker_addr_table["b"].broker_addrs == {0: "x:1"}
    assert info.cluster_addr_table == {"C": ["b"]}
    assert info.to_json(standard=False) == body


@pytest.mark.parametrize("compressed", [False, True])
def test_protocol_register_bodies_decode_in_the_namesrv(compressed: bool) -> None:
    wrapper = bodies.TopicConfigSerializeWrapper(
        {"T": bodies.TopicConfig("T", 8, 4, 6)}, bodies.DataVersion(timestamp=42, counter=3)
    )
    body = bodies.RegisterBrokerBody(wrapper, ["f:1"]).encode(compressed=compressed)
    reg = wire.decode_registration(body, compressed=compressed)
    assert reg.data_version == DataVersion(42, 3)
    assert reg.topic_configs == {"T": TopicConfigEntry("T", 8, 4, 6)}
    assert reg.filter_servers == ["f:1"]
