"""The stream reader's driver-side decisions with a fake cluster: no JVM, no sockets.

The fake stands in for `BrokerAccess` (the part that talks to the name server and brokers); the
reader's own logic (initial offsets, rate limits, availableNow target, new and recreated queues,
retention) runs unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from orbitmq.spark.broker_access import TopicQueues
from orbitmq.spark.cluster_view import ClusterView
from orbitmq.spark.offsets import OffsetMap, QueueRef, from_offset_json
from orbitmq.spark.options import parse_source_options
from orbitmq.spark.planning import DataLossError
from orbitmq.spark.source import OrbitStreamReader

B = "broker-a"


class FakeCluster:
    """Queues of topic "t" on one broker: min and max offset per queue id, changed by the tests."""

    def __init__(self, queues: dict[int, tuple[int, int]]) -> None:
        self.queues = queues

    def topic_queues(self, topics: Iterable[str]) -> dict[str, TopicQueues]:
        n = max(self.queues) + 1
        return {t: TopicQueues(t, {B: "127.0.0.1:1"}, {B: n}, {B: n}) for t in topics if t == "t"}

    def topics_matching(self, pattern: str) -> list[str]:
        return ["t"]

    def min_max_offsets(
        self, addresses: Mapping[str, str], queues: Sequence[QueueRef]
    ) -> tuple[OffsetMap, OffsetMap]:
        known = [q for q in queues if q.queue_id in self.queues]
        return {q: self.queues[q.queue_id][0] for q in known}, {q: self.queues[q.queue_id][1] for q in known}

    def close(self) -> None:
        pass


def reader(cluster: FakeCluster, **options: str) -> OrbitStreamReader:
    opts = parse_source_options({"namesrv": "127.0.0.1:9876", "topic": "t", **options}, streaming=True)
    r = OrbitStreamReader(opts)
    r._view = ClusterView(opts, cluster)  # type: ignore[arg-type]
    return r


def q(i: int) -> QueueRef:
    return QueueRef("t", B, i)


def ranges(r: OrbitStreamReader, start: dict[str, Any], end: dict[str, Any]) -> list[tuple[int, int, int]]:
    return [(p.value.queue_id, p.value.start, p.value.end) for p in r.partitions(start, end)]


def test_initial_offsets_follow_the_option() -> None:
    cluster = FakeCluster({0: (5, 10), 1: (0, 3)})
    assert from_offset_json(reader(cluster).initialOffset()) == {q(0): 10, q(1): 3}  # latest by default
    assert from_offset_json(reader(cluster, startingOffsets="earliest").initialOffset()) == {q(0): 5, q(1): 0}


def test_rate_limit_then_available_now_target() -> None:
    cluster = FakeCluster({0: (0, 100), 1: (0, 10)})
    r = reader(cluster, startingOffsets="earliest", maxOffsetsPerTrigger="22")
    assert r.getDefaultReadLimit() == ReadMaxRows(22)
    start = r.initialOffset()
    r.prepareForTriggerAvailableNow()
    cluster.queues = {0: (0, 500), 1: (0, 50)}  # written after the trigger started: not read
    end = r.latestOffset(start, ReadMaxRows(22))
    assert from_offset_json(end) == {q(0): 19, q(1): 3}
    assert ranges(r, start, end) == [(0, 0, 19), (1, 0, 3)]
    end = r.latestOffset(start, ReadAllAvailable())
    assert from_offset_json(end) == {q(0): 100, q(1): 10}  # capped at the target
    assert r.latestOffset(end, ReadAllAvailable()) == end  # nothing more: the availableNow run ends
    assert from_offset_json(r.reportLatestOffset() or {}) == {q(0): 500, q(1): 50}


def test_a_new_queue_is_read_from_its_beginning() -> None:
    cluster = FakeCluster({0: (0, 4)})
    r = reader(cluster, startingOffsets="latest")
    start = r.initialOffset()
    cluster.queues = {0: (0, 6), 1: (0, 3)}
    end = r.latestOffset(start, ReadAllAvailable())
    assert ranges(r, start, end) == [(0, 4, 6), (1, 0, 3)]


def test_recreated_queue_fails_or_restarts_from_its_new_beginning() -> None:
    cluster = FakeCluster({0: (0, 100), 1: (0, 10)})
    start = {"t": {B: {"0": 100, "1": 10}}}
    cluster.queues = {0: (0, 7), 1: (0, 12)}  # queue 0 went backwards: recreated
    with pytest.raises(DataLossError, match="recreated or truncated"):
        reader(cluster).latestOffset(start, ReadAllAvailable())
    r = reader(cluster, failOnDataLoss="false")
    end = r.latestOffset(start, ReadAllAvailable())
    assert from_offset_json(end) == {q(0): 7, q(1): 12}
    assert ranges(r, start, end) == [(0, 0, 7), (1, 10, 12)]


def test_retention_below_the_start_fails_or_skips() -> None:
    cluster = FakeCluster({0: (0, 50)})
    start, end = {"t": {B: {"0": 10}}}, {"t": {B: {"0": 50}}}
    cluster.queues = {0: (30, 50)}  # [10, 30) deleted by retention before the batch ran
    with pytest.raises(DataLossError, match=r"\[10, 30\) were removed"):
        reader(cluster).partitions(start, end)
    assert ranges(reader(cluster, failOnDataLoss="false"), start, end) == [(0, 30, 50)]


def test_min_partitions_and_empty_batches() -> None:
    cluster = FakeCluster({0: (0, 100)})
    r = reader(cluster, minPartitions="4")
    start, end = {"t": {B: {"0": 0}}}, {"t": {B: {"0": 100}}}
    assert ranges(r, start, end) == [(0, 0, 25), (0, 25, 50), (0, 50, 75), (0, 75, 100)]
    assert r.partitions(end, end) == []


def test_the_executor_copy_carries_no_connection() -> None:
    import pickle

    r = reader(FakeCluster({0: (0, 1)}))
    r.initialOffset()
    copy = pickle.loads(pickle.dumps(r))
    assert copy._view is None and copy._access is None and copy.options == r.options
