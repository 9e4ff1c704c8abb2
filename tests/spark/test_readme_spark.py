"""The Spark quick start of docs/spark.md (the README links to it), run as written against the test
cluster: the documented address replaced by the cluster's, `getOrCreate()` picking up the suite's one
SparkSession (no second JVM)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest
from tests.spark.conftest import Cluster

pytestmark = pytest.mark.spark

SPARK_DOC = Path(__file__).resolve().parents[2] / "docs" / "spark.md"


def spark_block() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", SPARK_DOC.read_text(encoding="utf-8"), flags=re.M | re.S)
    (block,) = [b for b in blocks if "spark" in b]
    return block


def test_spark_doc_block_creates_its_topic_and_reads_it(spark: Any, cluster: Cluster) -> None:
    code = spark_block().replace("127.0.0.1:9876", cluster.namesrv)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/spark.md (quick start)", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == "read 10 messages from page-views"
    assert "page-views" in cluster.access.topic_queues(["page-views"])
