"""Allocation strategies (fact sheet 11): exact splits, and the clustering property that every queue
goes to exactly one consumer."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.client.allocation import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateByConfig,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateStrategy,
    md5_hash,
    strategy_by_name,
)
from orbitmq.common.errors import ClientError
from orbitmq.message.model import MessageQueue


def queues(n: int, broker: str = "broker-a", topic: str = "T") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def cids(c: int) -> list[str]:
    return sorted(f"127.0.0.1@{i}" for i in range(c))


def split(
    strategy: AllocateStrategy, mqs: list[MessageQueue], ids: list[str]
) -> dict[str, list[MessageQueue]]:
    return {cid: strategy.allocate("G", cid, mqs, ids) for cid in ids}


def test_averagely_contiguous_blocks_first_consumers_get_the_extra() -> None:
    mqs = queues(8)
    result = split(AllocateAveragely(), mqs, cids(3))
    assert [[mq.queue_id for mq in r] for r in result.values()] == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_averagely_more_consumers_than_queues() -> None:
    mqs = queues(2)
    result = split(AllocateAveragely(), mqs, cids(4))
    assert [[mq.queue_id for mq in r] for r in result.values()] == [[0], [1], [], []]


def test_by_circle_deals_round_robin() -> None:
    result = split(AllocateAveragelyByCircle(), queues(8), cids(3))
    assert [[mq.queue_id for mq in r] for r in result.values()] == [[0, 3, 6], [1, 4, 7], [2, 5]]


def test_consumer_not_in_list_gets_nothing() -> None:
    for strategy in (AllocateAveragely(), AllocateAveragelyByCircle(), AllocateConsistentHash()):
        assert strategy.allocate("G", "stranger", queues(4), cids(2)) == []


def test_preconditions_raise_client_error() -> None:
    with pytest.raises(ClientError):
        AllocateAveragely().allocate("G", "", queues(1), cids(1))
    with pytest.raises(ClientError):
        AllocateAveragely().allocate("G", "a", [], ["a"])
    with pytest.raises(ClientError):
        AllocateAveragely().allocate("G", "a", queues(1), [])


def test_md5_hash_is_first_four_digest_bytes_big_endian_unsigned() -> None:
    # md5("a") = 0cc175b9c0f1b6a8...
    assert md5_hash("a") == 0x0CC175B9
    assert md5_hash("MessageQueue [topic=T, brokerName=b, queueId=0]") >= 0


def test_consistent_hash_owner_is_next_ring_point_clockwise() -> None:
    ids = cids(3)
    mqs = queues(16)
    strategy = AllocateConsistentHash(virtual_nodes=5)
    ring = sorted((md5_hash(f"{cid}-{r}"), cid) for cid in ids for r in range(5))
    for mq in mqs:
        h = md5_hash(str(mq))
        expected = next((cid for point, cid in ring if point >= h), ring[0][1])
        assert mq in strategy.allocate("G", expected, mqs, ids)


def test_consistent_hash_moves_only_queues_of_the_leaving_consumer() -> None:
    mqs = queues(64, "broker-a") + queues(64, "broker-b")
    ids = cids(4)
    strategy = AllocateConsistentHash()
    before = split(strategy, mqs, ids)
    leaving = ids[1]
    after = split(strategy, mqs, [c for c in ids if c != leaving])
    for cid, owned in after.items():
        assert set(before[cid]) <= set(owned)  # nobody loses a queue it had


def test_by_config_returns_configured_queues() -> None:
    configured = [MessageQueue("T", "b", 3)]
    assert AllocateByConfig(configured).allocate("G", "x", queues(8), ["y"]) == configured


def test_by_machine_room_only_takes_rooms_of_the_consumer() -> None:
    mqs = queues(3, "room1@broker-a") + queues(3, "room2@broker-b") + queues(2, "broker-c")
    ids = cids(2)
    strategy = AllocateByMachineRoom({"room1"})
    result = split(strategy, mqs, ids)
    assert [[str(mq.queue_id) for mq in r] for r in result.values()] == [["0", "2"], ["1"]]
    assert all(mq.broker_name == "room1@broker-a" for r in result.values() for mq in r)


class PrefixResolver:
    def broker_deploy_in(self, mq: MessageQueue) -> str:
        return mq.broker_name.split("-")[0]

    def consumer_deploy_in(self, client_id: str) -> str:
        return client_id.split("-", maxsplit=1)[0]


def test_machine_room_nearby_prefers_own_room_and_shares_orphan_rooms() -> None:
    mqs = sorted(queues(4, "hz-broker") + queues(4, "sh-broker") + queues(2, "bj-broker"))
    ids = sorted(["hz-c1", "hz-c2", "sh-c1"])
    strategy = AllocateMachineRoomNearby(AllocateAveragely(), PrefixResolver())
    assert strategy.name == "MACHINE_ROOM_NEARBY-AVG"
    result = split(strategy, mqs, ids)
    # sh-c1 is alone in its room: all four sh queues; bj has no consumer: split among all three.
    assert {mq for mq in result["sh-c1"] if mq.broker_name == "sh-broker"} == set(queues(4, "sh-broker"))
    assert all(mq.broker_name != "sh-broker" for mq in result["hz-c1"] + result["hz-c2"])
    counts = Counter(mq for r in result.values() for mq in r)
    assert set(counts) == set(mqs) and set(counts.values()) == {1}


def test_strategy_by_name() -> None:
    assert strategy_by_name("avg").name == "AVG"
    assert strategy_by_name("CONSISTENT_HASH").name == "CONSISTENT_HASH"
    with pytest.raises(ClientError, match="unknown allocation strategy"):
        strategy_by_name("nope")


STRATEGIES = [AllocateAveragely(), AllocateAveragelyByCircle(), AllocateConsistentHash(virtual_nodes=3)]


@given(
    n_queues=st.integers(1, 40),
    n_brokers=st.integers(1, 3),
    n_consumers=st.integers(1, 12),
    which=st.sampled_from(range(len(STRATEGIES))),
)
def test_clustering_every_queue_exactly_once(
    n_queues: int, n_brokers: int, n_consumers: int, which: int
) -> None:
    mqs = sorted(mq for b in range(n_brokers) for mq in queues(n_queues, f"broker-{b}"))
    ids = cids(n_consumers)
    result = split(STRATEGIES[which], mqs, ids)
    counts = Counter(mq for r in result.values() for mq in r)
    assert set(counts) == set(mqs)
    assert set(counts.values()) == {1}
    # Deterministic: computing again gives the same split (every consumer must agree).
    assert split(STRATEGIES[which], mqs, ids) == result


@given(n_queues=st.integers(1, 40), n_consumers=st.integers(1, 12))
def test_averagely_balanced_within_one(n_queues: int, n_consumers: int) -> None:
    sizes = [len(r) for r in split(AllocateAveragely(), queues(n_queues), cids(n_consumers)).values()]
    assert max(sizes) - min(sizes) <= 1
