"""The executor-side range reader against a real broker, without Spark: pipelined pulls with short
answers, a stable replay, and a task that stops early (its pull thread must end with it)."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pyarrow as pa
import pytest

from orbitmq.spark import range_reader
from orbitmq.spark.range_reader import RangeSpec, read_range

from .conftest import BROKER, Cluster


def _spec(cluster: Cluster, start: int, end: int, **changes: Any) -> RangeSpec:
    spec = RangeSpec(
        topic="events", broker=BROKER, queue_id=1, start=start, end=end, address=cluster.broker_addr,
        namesrv=(cluster.namesrv,), group="orbitmq_spark_reader", tags="*", pull_batch_size=7,
        pull_timeout_ms=10000, pull_concurrency=3, fail_on_data_loss=True,
    )  # fmt: skip
    return dataclasses.replace(spec, **changes)


def _pull_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("orbitmq-pull-")]


def test_pipelined_windows_read_the_range_in_order_and_replay_identically(cluster: Cluster) -> None:
    # Windows of 7 offsets, 3 in flight, a range that does not end on a window boundary.
    first = pa.Table.from_batches(list(read_range(_spec(cluster, 3, 95))))
    assert first.column("queue_offset").to_pylist() == list(range(3, 95))
    sent = cluster.sent[("events", 1)]
    assert first.column("body").to_pylist() == [m.body for m in sent[3:95]]
    again = pa.Table.from_batches(list(read_range(_spec(cluster, 3, 95, pull_concurrency=1))))
    assert again.equals(first)
    assert not _pull_threads()


def test_a_task_that_stops_early_stops_its_pulls(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(range_reader, "TARGET_BATCH_ROWS", 10)
    batches = read_range(_spec(cluster, 0, 100))
    head = next(batches)
    assert head.column("queue_offset").to_pylist()[0] == 0
    batches.close()
    assert not _pull_threads()
