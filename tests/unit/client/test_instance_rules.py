"""ClientConfig and the heartbeat body, checked against the protocol layer's HeartbeatData (no sockets)."""

from __future__ import annotations

import pytest

from orbitmq.client.config import ClientConfig, parse_namesrv_addrs
from orbitmq.client.instance import CLIENT_INNER_PRODUCER_GROUP, ClientInstance
from orbitmq.client.push_consumer import PushConsumer
from orbitmq.protocol.bodies import HeartbeatData


def test_namesrv_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_namesrv_addrs("a:1; b:2;") == ["a:1", "b:2"]
    assert parse_namesrv_addrs(["a:1", " ", "b:2"]) == ["a:1", "b:2"]
    monkeypatch.setenv("NAMESRV_ADDR", "x:9876")
    assert parse_namesrv_addrs(None) == ["x:9876"]


def test_client_ids_differ_per_instance() -> None:
    a, b = ClientConfig(client_ip="10.0.0.1"), ClientConfig(client_ip="10.0.0.1")
    assert a.client_id.startswith("10.0.0.1@") and a.client_id != b.client_id
    assert ClientConfig(client_ip="1.2.3.4", instance_name="I", unit_name="U").client_id == "1.2.3.4@I@U"


async def test_heartbeat_body_lists_groups_and_subscriptions() -> None:
    instance = ClientInstance(
        ClientConfig(namesrv_addrs=["127.0.0.1:1"], client_ip="1.2.3.4", instance_name="i")
    )
    consumer = PushConsumer("CG", instance=instance)
    consumer.subscribe("T", "a || b")
    instance.register_consumer(consumer)
    data = HeartbeatData.from_json(instance.heartbeat_json())
    assert data.client_id == "1.2.3.4@i"
    assert [p.group_name for p in data.producer_data_set] == [CLIENT_INNER_PRODUCER_GROUP]
    (cd,) = data.consumer_data_set
    assert (cd.group_name, str(cd.message_model), str(cd.consume_type)) == (
        "CG",
        "CLUSTERING",
        "CONSUME_PASSIVELY",
    )
    topics = {s.topic: s for s in cd.subscription_data_set}
    assert set(topics) == {"T", "%RETRY%CG"}  # clustering consumers also subscribe their retry topic
    assert sorted(topics["T"].tags_set) == ["a", "b"]
    await instance.remoting.close()
