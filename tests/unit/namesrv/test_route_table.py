"""RouteInfoManager bookkeeping rules (fact sheet 7.3) with a fake clock."""

from __future__ import annotations

from orbitmq.common.clock import FakeClock
from orbitmq.namesrv.route_table import DataVersion, RouteInfoManager, TopicConfigEntry

M = "10.0.0.1:10911"
S = "10.0.0.2:10911"
V1 = DataVersion(1, 1)


def configs(*names: str, queues: int = 4, perm: int = 6) -> dict[str, TopicConfigEntry]:
    return {n: TopicConfigEntry(n, queues, queues, perm) for n in names}


def reg(
    rim: RouteInfoManager,
    *,
    addr: str = M,
    name: str = "broker-a",
    broker_id: int = 0,
    cluster: str = "C",
    ha: str = "10.0.0.1:10912",
    version: DataVersion = V1,
    topics: dict[str, TopicConfigEntry] | None = None,
    channel: object | None = None,
) -> tuple[str | None, str | None]:
    result = rim.register_broker(
        cluster_name=cluster,
        broker_addr=addr,
        broker_name=name,
        broker_id=broker_id,
        ha_server_addr=ha,
        data_version=version,
        topic_configs=topics if topics is not None else {},
        channel=channel,
    )
    return result.ha_server_addr, result.master_addr


def test_register_builds_tables_and_route() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    reg(rim, topics=configs("T1", "T2"))
    assert rim.cluster_addr_table == {"C": {"broker-a"}}
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: M}
    route = rim.get_topic_route("T1")
    assert route is not None
    assert [(q.broker_name, q.read_queue_nums, q.perm) for q in route.queue_datas] == [("broker-a", 4, 6)]
    assert route.broker_datas[0].broker_addrs == {0: M}
    assert rim.get_topic_route("nope") is None


def test_topic_data_changes_only_with_a_new_data_version() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    reg(rim, topics=configs("T1"), version=DataVersion(1, 1))
    # Same version: the (different) body is ignored, as RocketMQ does.
    reg(rim, topics=configs("T1", queues=8), version=DataVersion(1, 1))
    route = rim.get_topic_route("T1")
    assert route is not None and route.queue_datas[0].write_queue_nums == 4
    reg(rim, topics=configs("T1", queues=8), version=DataVersion(1, 2))
    route = rim.get_topic_route("T1")
    assert route is not None and route.queue_datas[0].write_queue_nums == 8


def test_incremental_registration_merges_and_never_removes() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    reg(rim, topics=configs("T1", "T2"), version=DataVersion(1, 1))
    reg(rim, topics=configs("T3"), version=DataVersion(1, 2))
    assert sorted(rim.all_topics()) == ["T1", "T2", "T3"]


def test_slaves_get_master_ha_address_and_do_not_build_queue_data() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    assert reg(rim, addr=S, broker_id=1, topics=configs("FromSlave")) == (None, None)
    reg(rim, topics=configs("T1"))
    assert reg(rim, addr=S, broker_id=1, ha="10.0.0.2:10912") == ("10.0.0.1:10912", M)
    assert rim.get_topic_route("FromSlave") is None
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: M, 1: S}


def test_same_address_under_a_new_id_replaces_the_old_id() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    reg(rim, addr=S, broker_id=1)
    reg(rim, addr=S, broker_id=0, topics=configs("T"))  # the slave became master
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: S}


def test_unregister_last_address_removes_broker_cluster_and_topics() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    reg(rim, topics=configs("Only", "Shared"))
    reg(rim, addr="10.0.0.3:10911", name="broker-b", topics=configs("Shared"))
    reg(rim, addr=S, broker_id=1)
    rim.unregister_broker(cluster_name="C", broker_addr=S, broker_name="broker-a", broker_id=1)
    assert rim.get_topic_route("Only") is not None  # master still there
    rim.unregister_broker(cluster_name="C", broker_addr=M, broker_name="broker-a", broker_id=0)
    assert rim.get_topic_route("Only") is None
    shared = rim.get_topic_route("Shared")
    assert shared is not None and [q.broker_name for q in shared.queue_datas] == ["broker-b"]
    assert rim.cluster_addr_table == {"C": {"broker-b"}}
    assert M not in rim.broker_live_table


def test_expiry_with_fake_clock() -> None:
    clock = FakeClock()
    rim = RouteInfoManager(clock=clock, expiry_seconds=120)
    channel = object()
    reg(rim, topics=configs("T"), channel=channel)
    reg(rim, addr="10.0.0.3:10911", name="broker-b", topics=configs("U"))
    clock.advance(100)
    reg(rim, addr="10.0.0.3:10911", name="broker-b", topics=configs("U"))  # heartbeat for broker-b only
    clock.advance(21)
    expired = rim.scan_not_active_brokers()
    assert [(e.broker_addr, e.channel) for e in expired] == [(M, channel)]
    assert rim.get_topic_route("T") is None
    assert rim.get_topic_route("U") is not None
    clock.advance(100)
    assert [e.broker_addr for e in rim.scan_not_active_brokers()] == ["10.0.0.3:10911"]
    assert rim.cluster_addr_table == {}


def test_touch_broker_keeps_it_alive() -> None:
    clock = FakeClock()
    rim = RouteInfoManager(clock=clock, expiry_seconds=120)
    reg(rim, topics=configs("T"), version=DataVersion(5, 5))
    for _ in range(5):
        clock.advance(60)
        assert not rim.is_broker_topic_config_changed(M, DataVersion(5, 5))
        rim.touch_broker(M)
        assert rim.scan_not_active_brokers() == []
    assert rim.is_broker_topic_config_changed(M, DataVersion(5, 6))
    assert rim.query_broker_data_version(M) == DataVersion(5, 5)


def test_channel_destroy_removes_only_the_broker_of_that_channel() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    a, b = object(), object()
    reg(rim, topics=configs("T"), channel=a)
    reg(rim, addr="10.0.0.3:10911", name="broker-b", topics=configs("T"), channel=b)
    assert rim.on_channel_destroy(object()) is None  # a client's channel: nothing happens
    assert rim.on_channel_destroy(a) == M
    route = rim.get_topic_route("T")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]


def test_write_perm_wipe_and_add() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    reg(rim, topics=configs("T1", "T2"))
    reg(rim, addr="10.0.0.3:10911", name="broker-b", topics=configs("T1"))
    assert rim.wipe_write_perm("broker-a") == 2
    route = rim.get_topic_route("T1")
    assert route is not None
    assert {q.broker_name: q.perm for q in route.queue_datas} == {"broker-a": 4, "broker-b": 6}
    assert rim.add_write_perm("broker-a") == 2
    assert rim.wipe_write_perm("unknown") == 0


def test_delete_topic_whole_or_per_cluster() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    reg(rim, topics=configs("T", "X"))
    reg(rim, addr="10.0.0.3:10911", name="broker-b", cluster="D", topics=configs("T"))
    assert sorted(rim.topics_by_cluster("D")) == ["T"]
    rim.delete_topic("T", "C")
    route = rim.get_topic_route("T")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
    rim.delete_topic("T")
    assert rim.get_topic_route("T") is None
    assert rim.all_topics() == ["X"]


def test_filter_servers_and_system_topics() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    rim.register_broker(
        cluster_name="C",
        broker_addr=M,
        broker_name="broker-a",
        broker_id=0,
        ha_server_addr="h",
        data_version=DataVersion(1, 1),
        topic_configs=configs("T"),
        filter_servers=["10.0.0.9:1"],
    )
    route = rim.get_topic_route("T")
    assert route is not None and route.filter_server_table == {M: ["10.0.0.9:1"]}
    topics, addr = rim.system_topics()
    assert topics == ["C", "broker-a"] and addr == M


def test_unit_topic_lists_follow_the_topic_sys_flag() -> None:
    rim = RouteInfoManager(clock=FakeClock())
    topics = {
        "plain": TopicConfigEntry("plain", topic_sys_flag=0),
        "unit": TopicConfigEntry("unit", topic_sys_flag=1),
        "sub": TopicConfigEntry("sub", topic_sys_flag=2),
        "both": TopicConfigEntry("both", topic_sys_flag=3),
    }
    reg(rim, topics=topics)
    assert sorted(rim.unit_topics(unit=True, unit_sub=None)) == ["both", "unit"]
    assert sorted(rim.unit_topics(unit=None, unit_sub=True)) == ["both", "sub"]
    assert rim.unit_topics(unit=False, unit_sub=True) == ["sub"]
