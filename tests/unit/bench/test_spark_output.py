# ruff: noqa: E501  (the table lines below are as wide as spark_bench.py prints them)
"""Parsing spark_bench.py's (`orbitmq bench spark`) printed table (W7) into harness rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.bench.spark_workload import (
    ceiling_rate,
    parse_message_count,
    parse_spark_table,
    to_measurements,
    unavailable_reason,
)

# The shape spark_bench.py prints (f"{name:<52}{rate:>12,.0f}{ratio:>11}  {note}"), with Spark's own
# chatter around it.
OUTPUT = """\
25/11/22 04:10:01 WARN NativeCodeLoader: Unable to load native-hadoop library
Setting default log level to "WARN".

orbitmq Spark connector, 200,000 messages of 1024 B, 4 queues, local[2], RocketMQ default pull limits
path                                                      rows/s  x ceiling  note
produce (raw batch sends, setup)                         101,234          -
consume (raw: pull + Arrow decode, no Spark)             812,000       1.62
arrow ceiling (Spark, pre-built batches -> noop)         400,000       0.80  warm-up run
arrow ceiling (Spark, pre-built batches -> noop)         500,000       1.00  warm; runq wait 0.20 s/s (broker 0.05)
batch read -> noop                                       150,000       0.30  first query of the session
batch read -> noop                                       420,000       0.84  warm
availableNow stream -> noop                              300,000       0.60  wall; engine 450,000/s
first orbitmq write of the session (~20k rows)          1,558          -  start-up; runq wait 1.79 s/s (broker 0.05); cpu/row spark 292.0 us, broker 9.0 us; cores spark 0.45, broker 0.01; 19,873 rows measured
arrow writer ceiling (Spark -> counting Arrow sink)      400,000       1.00  warm
batch write (Arrow writer, acked)                        350,500       0.88  body only; runq wait 0.31 s/s (broker 0.10)
batch read -> noop                                       430,000       0.86  warm
stream latency (processingTime 1 s, live producer)         2,001          -  latency p50 812 ms p99 1404 ms over 30,012 rows; producer 2,000/s; runq wait 0.50 s/s (broker 0.02); 40,020 rows measured
"""


def test_rows_are_parsed_and_chatter_ignored() -> None:
    rows = parse_spark_table(OUTPUT)
    assert [r.path for r in rows] == [
        "produce (raw batch sends, setup)",
        "consume (raw: pull + Arrow decode, no Spark)",
        "arrow ceiling (Spark, pre-built batches -> noop)",
        "arrow ceiling (Spark, pre-built batches -> noop)",
        "batch read -> noop",
        "batch read -> noop",
        "availableNow stream -> noop",
        "first orbitmq write of the session (~20k rows)",
        "arrow writer ceiling (Spark -> counting Arrow sink)",
        "batch write (Arrow writer, acked)",
        "batch read -> noop",
        "stream latency (processingTime 1 s, live producer)",
    ]
    assert rows[1].rows_per_s == 812_000 and rows[1].printed_ratio == 1.62 and rows[1].note == ""
    assert rows[6].note == "wall; engine 450,000/s"
    assert ceiling_rate(rows) == 500_000  # the warm ceiling, not the warm-up run
    assert parse_message_count(OUTPUT) == 200_000


def test_measurements_carry_rates_and_the_ratio_to_the_ceiling() -> None:
    results = to_measurements(parse_spark_table(OUTPUT), 200_000, 1024)
    by_case = {m.case: m for m in results}
    assert len(by_case) == len(results) == 12  # every row its own case in the table, rounds numbered
    warm = by_case["batch read -> noop (warm)"]
    assert warm.msgs_per_s == pytest.approx(420_000)
    assert warm.extra["ceiling_ratio"] == pytest.approx(0.84)
    assert "0.84x the Arrow ceiling" in warm.note
    assert by_case["batch read -> noop (warm) #2"].extra["ceiling_ratio"] == pytest.approx(0.86)
    stream = by_case["availableNow stream -> noop"]
    assert "engine 450,000/s" in stream.note
    # A write's ratio is the printed one (against the writer ceiling), not rows/s over the read ceiling.
    write = by_case["batch write (Arrow writer, acked) (body only)"]
    assert write.extra["ceiling_ratio"] == pytest.approx(0.88)
    assert write.note.endswith("runq wait 0.31 s/s (broker 0.10)")
    live = by_case["stream latency (processingTime 1 s, live producer)"]
    assert (live.latency.p50_us, live.latency.p99_us, live.latency.count) == (812_000, 1_404_000, 30_012)
    assert "ceiling_ratio" not in live.extra and live.msgs_per_s == pytest.approx(2_001)
    assert "ceiling_ratio" not in by_case["produce (raw batch sends, setup)"].extra  # printed "-"
    # The session's first write (start-up costs) is its own row, compared with nothing.
    first = by_case["first orbitmq write of the session (~20k rows) (start-up)"]
    assert "ceiling_ratio" not in first.extra and "cpu/row spark 292.0 us" in first.note
    # Rows over another count than N carry their own: the first write wrote a ~20k sample, not N.
    assert first.messages == 19_873 and first.seconds == pytest.approx(19_873 / 1_558)
    assert live.messages == 40_020
    assert warm.messages == 200_000 and warm.seconds == pytest.approx(200_000 / 420_000)


def test_a_changed_header_or_no_ceiling_still_parses() -> None:
    text = "name  rate  ratio\nbatch read -> noop   420,000   -  warm\nnot a row at all\n"
    rows = parse_spark_table(text)
    assert len(rows) == 1 and rows[0].printed_ratio is None and rows[0].note == "warm"
    [m] = to_measurements(rows, 1000, 1024)
    assert "ceiling_ratio" not in m.extra and m.msgs_per_s == pytest.approx(420_000)
    assert parse_spark_table("Traceback (most recent call last):\n  boom\n") == []


def test_missing_script_is_a_clear_reason(tmp_path: Path) -> None:
    reason = unavailable_reason(tmp_path / "spark_bench.py")
    assert reason is not None
    assert "spark_bench.py" in reason or "pyspark" in reason or "Java" in reason


def test_w7_passes_the_broker_count_to_the_script(tmp_path: Path) -> None:
    """`orbitmq bench W7 --serve-brokers N` runs spark_bench.py with --brokers N (and without it for 1)."""
    import asyncio
    import io

    from orbitmq.bench.progress import Progress
    from orbitmq.bench.spark_workload import run

    script = tmp_path / "fake_spark_bench.py"
    # Prints one table row whose note is the script's own arguments.
    script.write_text(
        "import sys\n"
        "print('path' + ' ' * 48 + 'rows/s  x ceiling  note')\n"
        "print(f\"{'batch read -> noop':<52}{1000:>12,.0f}{'-':>11}  {' '.join(sys.argv[1:])}\")\n"
    )
    if unavailable_reason(script) is not None:
        pytest.skip(str(unavailable_reason(script)))
    for brokers, wanted in ((2, "--brokers 2"), (1, "")):
        rows = asyncio.run(run(1000, 1024, Progress(io.StringIO(), tty=False), script, brokers=brokers))
        args = rows[0].case  # "<path> (<the note's first segment>)"
        args = args[args.index("(") + 1 : -1]
        assert args.startswith("--messages 1000 --size 1024 --max-transfer 1024")
        assert args.rstrip().endswith(wanted) and ("--brokers" in args) == bool(wanted), args
