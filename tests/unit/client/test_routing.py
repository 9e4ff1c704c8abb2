"""Route -> queue lists (fact sheet 4.2), round-robin queue selection and latency fault tolerance (7.6)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from orbitmq.client.fault import FaultStrategy, LatencyFaultTolerance, not_available_duration
from orbitmq.client.routing import TopicPublishInfo, publish_queues, select_queue, subscribe_queues
from orbitmq.common.clock import FakeClock
from orbitmq.message.model import MessageQueue


@dataclass
class QD:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = 6
    topic_sys_flag: int = 0


@dataclass
class BD:
    broker_name: str
    broker_addrs: dict[int, str]
    cluster: str = "DefaultCluster"


@dataclass
class Route:
    queue_datas: list[QD]
    broker_datas: list[BD]
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)


def two_brokers(perm_b: int = 6, master_b: bool = True) -> Route:
    return Route(
        [QD("broker-b", 2, 3, perm_b), QD("broker-a", 4, 2)],
        [BD("broker-a", {0: "127.0.0.1:1"}), BD("broker-b", {0 if master_b else 1: "127.0.0.1:2"})],
    )


def test_publish_queues_sorted_by_broker_and_write_nums() -> None:
    queues, ordered = publish_queues("T", two_brokers())
    assert not ordered
    assert [(q.broker_name, q.queue_id) for q in queues] == [
        ("broker-a", 0),
        ("broker-a", 1),
        ("broker-b", 0),
        ("broker-b", 1),
        ("broker-b", 2),
    ]


def test_publish_skips_unwritable_and_masterless_brokers() -> None:
    assert {q.broker_name for q in publish_queues("T", two_brokers(perm_b=4))[0]} == {"broker-a"}
    assert {q.broker_name for q in publish_queues("T", two_brokers(master_b=False))[0]} == {"broker-a"}


def test_publish_queues_accept_string_broker_ids() -> None:
    route = Route([QD("b", 1, 1)], [BD("b", {"0": "x"})])  # type: ignore[dict-item]
    assert publish_queues("T", route)[0] == [MessageQueue("T", "b", 0)]


def test_order_topic_conf_wins() -> None:
    route = two_brokers()
    route.order_topic_conf = "broker-a:1;broker-b:2"
    queues, ordered = publish_queues("T", route)
    assert ordered
    assert [(q.broker_name, q.queue_id) for q in queues] == [
        ("broker-a", 0),
        ("broker-b", 0),
        ("broker-b", 1),
    ]


def test_subscribe_queues_use_read_nums_of_readable_brokers() -> None:
    route = two_brokers(perm_b=2)
    assert subscribe_queues("T", route) == [MessageQueue("T", "broker-a", i) for i in range(4)]


def test_round_robin_visits_every_queue_evenly() -> None:
    info = TopicPublishInfo.from_route("T", two_brokers())
    fault = FaultStrategy(enabled=False)
    picks = Counter(select_queue(info, None, fault) for _ in range(50))
    assert set(picks.values()) == {10}


def test_retry_avoids_last_broker() -> None:
    info = TopicPublishInfo.from_route("T", two_brokers())
    for _ in range(20):
        assert select_queue(info, "broker-a", FaultStrategy()).broker_name == "broker-b"
        assert select_queue(info, "broker-b", FaultStrategy()).broker_name == "broker-a"


def test_single_broker_retry_uses_it_anyway() -> None:
    route = Route([QD("a", 2, 2)], [BD("a", {0: "x"})])
    info = TopicPublishInfo.from_route("T", route)
    assert select_queue(info, "a", FaultStrategy()).broker_name == "a"


def test_not_available_duration_table() -> None:
    assert not_available_duration(0) == 0
    assert not_available_duration(99) == 0
    assert not_available_duration(550) == 30000
    assert not_available_duration(999) == 30000
    assert not_available_duration(1000) == 60000
    assert not_available_duration(2500) == 120000
    assert not_available_duration(3000) == 180000
    assert not_available_duration(30000) == 600000


def test_failed_broker_isolated_for_window_then_picked_again() -> None:
    clock = FakeClock()
    fault = FaultStrategy(enabled=True, clock=clock, rng=random.Random(1))
    info = TopicPublishInfo.from_route("T", two_brokers())
    fault.update_fault_item("broker-a", 12, isolation=True)
    for _ in range(30):
        assert select_queue(info, None, fault).broker_name == "broker-b"
    clock.advance(599.9)
    assert all(select_queue(info, None, fault).broker_name == "broker-b" for _ in range(10))
    clock.advance(0.2)
    assert {select_queue(info, None, fault).broker_name for _ in range(10)} == {"broker-a", "broker-b"}


def test_slow_broker_isolated_by_latency_table() -> None:
    clock = FakeClock()
    fault = FaultStrategy(enabled=True, clock=clock)
    info = TopicPublishInfo.from_route("T", two_brokers())
    fault.update_fault_item("broker-b", 1200, isolation=False)  # -> 60 s
    fault.update_fault_item("broker-a", 30, isolation=False)  # fast: no window
    assert {select_queue(info, None, fault).broker_name for _ in range(20)} == {"broker-a"}
    clock.advance(60)
    assert "broker-b" in {select_queue(info, None, fault).broker_name for _ in range(20)}


def test_all_brokers_isolated_still_returns_a_queue_of_a_known_broker() -> None:
    clock = FakeClock()
    fault = FaultStrategy(enabled=True, clock=clock)
    info = TopicPublishInfo.from_route("T", two_brokers())
    fault.update_fault_item("broker-a", 0, isolation=True)
    fault.update_fault_item("broker-b", 0, isolation=True)
    mq = select_queue(info, None, fault)
    assert mq.broker_name in {"broker-a", "broker-b"}
    assert 0 <= mq.queue_id < info.write_queue_nums_of(mq.broker_name)


def test_disabled_strategy_records_nothing() -> None:
    fault = FaultStrategy(enabled=False)
    fault.update_fault_item("x", 99999, isolation=True)
    assert fault.tolerance.items == {}


def test_custom_tables_shorten_windows() -> None:
    clock = FakeClock()
    fault = FaultStrategy(enabled=True, clock=clock, latency_max=(0, 100), not_available_durations=(0, 2000))
    fault.update_fault_item("a", 0, isolation=True)
    assert not fault.tolerance.is_available("a")
    clock.advance(2)
    assert fault.tolerance.is_available("a")


def test_pick_one_at_least_prefers_available_then_faster() -> None:
    clock = FakeClock()
    tolerance = LatencyFaultTolerance(clock, random.Random(3))
    tolerance.update("slow", 5000, 0)
    tolerance.update("down", 100, 60000)
    tolerance.update("fast", 10, 0)
    tolerance.update("down2", 100, 60000)
    picks = {tolerance.pick_one_at_least() for _ in range(10)}
    assert picks == {"fast", "slow"}
