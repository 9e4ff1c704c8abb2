"""`orbitmq bench spark --rocketmq-home`: the Apache RocketMQ rows' names compare with the same ceilings
as orbitmq's rows, and a missing or broken installation is a reason, not an error. No Java needed."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from orbitmq.bench.spark_apache import SUFFIX
from orbitmq.bench.spark_bench import (
    AVAILABLE_NOW,
    READ_CEILING,
    STREAM_CEILING,
    WRITE_ALL_CEILING,
    WRITE_CEILING,
    ceiling_for,
    rocketmq_install,
)
from orbitmq.bench.spark_workload import parse_spark_table, to_measurements


def test_apache_rows_compare_with_the_ceilings_of_their_kind() -> None:
    results = [
        (READ_CEILING, 500_000.0, "warm"),
        (WRITE_CEILING, 800_000.0, "warm"),
        (WRITE_ALL_CEILING, 400_000.0, "warm"),
    ]
    assert ceiling_for("batch read -> noop" + SUFFIX, results) == 500_000.0
    assert ceiling_for("consume (raw: pull + Arrow decode, no Spark)" + SUFFIX, results) == 500_000.0
    assert ceiling_for("batch write (Arrow writer, acked)" + SUFFIX, results) == 800_000.0
    assert ceiling_for("batch write, all columns (acked)" + SUFFIX, results) == 400_000.0
    assert ceiling_for("produce (raw batch sends, setup)" + SUFFIX, results) == 0.0


def test_streams_compare_with_the_stream_ceiling() -> None:
    results = [
        (READ_CEILING, 500_000.0, "warm"),
        (STREAM_CEILING, 90_000.0, "warm-up run"),  # a first run is not a ceiling
        (STREAM_CEILING, 200_000.0, "warm"),
        (STREAM_CEILING, 300_000.0, "warm"),
    ]
    assert ceiling_for(AVAILABLE_NOW, results) == 250_000.0
    assert ceiling_for(STREAM_CEILING, results) == 250_000.0
    assert ceiling_for("batch read -> noop", results) == 500_000.0
    # a run without the stream ceiling compares its streams with the read ceiling, as before
    assert ceiling_for(AVAILABLE_NOW, results[:1]) == 500_000.0


def test_stream_rows_name_their_ceiling() -> None:
    table = "\n".join(
        [
            f"{'path':<52}{'rows/s':>12}{'x ceiling':>11}  note",
            f"{READ_CEILING:<52}{400_000:>12,}{'1.00':>11}  warm",
            f"{STREAM_CEILING:<52}{200_000:>12,}{'1.00':>11}  warm",
            f"{AVAILABLE_NOW:<52}{170_000:>12,}{'0.85':>11}  wall incl. query start; "
            "0.43x the batch read ceiling",
        ]
    )
    rows = to_measurements(parse_spark_table(table), 1000, 1024)
    assert rows[2].extra["ceiling_ratio"] == 0.85
    assert "0.85x the Arrow stream ceiling" in rows[2].note
    assert "0.43x the batch read ceiling" in rows[2].note
    assert "1.00x the Arrow ceiling" in rows[0].note


def test_apache_rows_become_w7_cases_of_their_own() -> None:
    table = "\n".join(
        [
            f"{'path':<52}{'rows/s':>12}{'x ceiling':>11}  note",
            f"{'batch write (Arrow writer, acked)':<52}{100_000:>12,}{'0.20':>11}  body only; broker 5.0 us",
            f"{'batch write (Arrow writer, acked)' + SUFFIX:<52}{90_000:>12,}{'0.18':>11}  body only; x",
        ]
    )
    rows = to_measurements(parse_spark_table(table), 1000, 1024)
    assert [m.case for m in rows] == [
        "batch write (Arrow writer, acked) (body only)",
        "batch write (Arrow writer, acked) (Apache RocketMQ) (body only)",
    ]
    assert rows[1].extra["ceiling_ratio"] == 0.18
    assert "Arrow writer ceiling" in rows[1].note


def test_no_installation_is_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORBITMQ_BENCH_ROCKETMQ_HOME", raising=False)
    assert "--rocketmq-home" in str(rocketmq_install(None))
    empty = tmp_path / "rmq"
    empty.mkdir()
    reason = rocketmq_install(empty)
    assert isinstance(reason, str) and "lib/*.jar" in reason
    monkeypatch.setenv("ORBITMQ_BENCH_ROCKETMQ_HOME", str(tmp_path / "absent"))
    assert "is not a directory" in str(rocketmq_install(None))
