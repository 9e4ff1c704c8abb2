"""The clickstream example's pieces, run against the test cluster: producer -> job -> Parquet + topic."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from examples.clickstream.job import start_job
from examples.clickstream.producer import produce_clicks
from examples.clickstream.topics import COUNTS, ensure_topics
from tests.spark.conftest import Cluster

pytestmark = pytest.mark.spark


def test_clickstream_pipeline_counts_every_click(spark: Any, cluster: Cluster, tmp_path: Path) -> None:
    assert ensure_topics(cluster.namesrv) == [cluster.broker_addr]
    stop = threading.Event()
    produced: list[int] = []
    producer = threading.Thread(
        target=lambda: produced.append(produce_clicks(cluster.namesrv, stop, per_second=200))
    )
    producer.start()
    stop.wait(1.0)
    stop.set()
    producer.join()
    assert produced[0] > 0

    query = start_job(spark, cluster.namesrv, tmp_path, available_now=True)
    try:
        assert query.awaitTermination(120)
        assert query.exception() is None
    finally:
        query.stop()
    counts = spark.read.parquet(str(tmp_path / "counts")).collect()
    latest: dict[tuple[Any, str], tuple[int, int]] = {}
    for row in counts:
        key = (row.minute, row.page)
        if key not in latest or latest[key][0] < row.batch_id:
            latest[key] = (row.batch_id, row["count"])
    assert sum(c for _, c in latest.values()) == produced[0]

    results = spark.read.format("orbitmq").option("namesrv", cluster.namesrv).option("topic", COUNTS).load()
    bodies = [json.loads(bytes(r.body)) for r in results.collect()]
    assert len(bodies) == len(counts)
    assert {b["page"] for b in bodies} == {page for _, page in latest}
