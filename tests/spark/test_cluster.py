"""The connector on a real Spark standalone cluster: a master and two workers (1 core each) from the
pyspark package's `spark-class`, executors in their own JVMs with their own Python workers, and the
driver in a process of its own (tests/spark/cluster_driver.py), restarted between the two stream runs.

Same exact-count checks as local mode: a batch read, an availableNow stream with a checkpoint restart
(in a NEW driver process: nothing may survive only in the old driver), and a write read back. The
broker is reached through the `namesrv` option alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.spark.conftest import Cluster
from tests.spark.standalone import Standalone, java_missing

import orbitmq

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DRIVER = Path(__file__).with_name("cluster_driver.py")
DRIVER_TIMEOUT_S = 300.0
QUEUES = 4


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    reason = java_missing()
    if reason:
        pytest.skip(reason)
    cluster = Standalone(tmp_path_factory.mktemp("spark-standalone"))
    try:
        cluster.start(workers=2)
        yield cluster
    finally:
        cluster.stop()


def drive(phase: str, standalone: Standalone, cluster: Cluster, workdir: Path) -> dict[str, Any]:
    """Runs one driver process; its JVM is its child, so both go down together on a timeout."""
    src = str(Path(orbitmq.__file__).parents[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
    env.update(PYTHONPATH=src, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    argv = [sys.executable, str(DRIVER), phase, standalone.master_url, cluster.namesrv, str(workdir)]
    log = workdir / f"{phase}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = proc.wait(DRIVER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = -1
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever the driver left behind (its JVM)
            except ProcessLookupError:
                pass
            proc.wait()
    assert code == 0, log.read_text(errors="replace")[-4000:]
    result: dict[str, Any] = json.loads((workdir / f"{phase}.json").read_text())
    return result


def expected(cluster: Cluster, topic: str) -> list[list[Any]]:
    return [[q, i, body.decode()] for q, i, body in cluster.expected(topic)]


def test_batch_stream_restart_and_write_on_a_standalone_cluster(
    standalone: Standalone, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.create_topic("clustered", QUEUES)
    for q in range(QUEUES):
        cluster.produce("clustered", q, 30 + 10 * q)  # 30, 40, 50, 60: 180 messages
    cluster.create_topic("cluster_written", QUEUES)

    first = drive("first", standalone, cluster, tmp_path)
    assert len(first["executors"]) == 3  # two executors and the driver's block manager
    # Every partition of the batch read ran in a Python worker of an executor that a worker launched
    # (its working directory is inside a worker's work dir), never in the driver.
    assert first["partitions"] >= 6
    assert sum(n for _, _, n, _ in first["placement"]) == 180
    worker_dirs = {str(standalone.workdir / f"worker{i}") for i in range(2)}
    for pid, _, _, cwd in first["placement"]:
        assert pid != first["driver_pid"]
        assert any(cwd.startswith(d + os.sep) for d in worker_dirs), cwd
    assert first["batch"] == expected(cluster, "clustered")
    assert first["stream_sizes"] == [90, 90]  # maxOffsetsPerTrigger honoured under availableNow
    assert first["stream_rows"] == expected(cluster, "clustered")

    written = first["written"]
    assert [w[0] for w in written] == sorted(f"w-{i}" for i in range(120))
    for body, tags, n, _, _ in written:
        assert (tags, n) == (f"T{int(n) % 2}", body[2:])
    queues_of_key: dict[int, set[int]] = {}
    for _, _, n, queue, _ in written:
        queues_of_key.setdefault(int(n) % 5, set()).add(queue)
    assert all(len(q) == 1 for q in queues_of_key.values())  # sharding key -> one queue
    assert len({w[4] for w in written}) == 120  # one distinct message id per row

    # A new driver process continues from the checkpoint: only the new messages, nothing twice.
    for q in range(QUEUES):
        cluster.produce("clustered", q, 5)
    again = drive("restart", standalone, cluster, tmp_path)
    assert again["stream_sizes"] == [20]
    assert again["stream_rows"] == expected(cluster, "clustered")
