"""Table and JSON rendering of measurements, including the orbitmq-vs-peer ratio (orbitmq.bench.table)."""

from __future__ import annotations

import orjson

from orbitmq.bench.result import Measurement, ratio
from orbitmq.bench.stats import LatencySummary
from orbitmq.bench.table import fmt_number, json_document, render_table


def m(system: str, msgs: int, seconds: float = 2.0, workload: str = "W1", p99: float = 100.0) -> Measurement:
    return Measurement(
        workload,
        "1 sender",
        system,
        messages=msgs,
        seconds=seconds,
        body_size=1000,
        latency=LatencySummary(msgs, 50.0, 40.0, p99, 500.0),
        server_cores=0.5,
        client_cores=0.95,
    )


def test_throughput_ratio_is_orbitmq_over_peer() -> None:
    assert ratio(m("orbitmq", 20_000), m("nats", 10_000)) == 2.0


def test_latency_ratio_is_peer_over_orbitmq() -> None:
    assert ratio(m("orbitmq", 1, workload="W4", p99=200.0), m("redis", 1, workload="W4", p99=600.0)) == 3.0


def test_ratio_missing_when_a_side_skipped() -> None:
    absent = Measurement("W1", "1 sender", "nats", skipped=True, note="not installed")
    assert ratio(m("orbitmq", 10), absent) is None


def test_table_puts_orbitmq_first_and_shows_ratio_and_cpu() -> None:
    text = render_table([m("nats", 8_000), m("orbitmq", 12_000), m("redis", 16_000)])
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["workload", "case", "system"]
    body = lines[2:5]
    assert [line.split()[3] for line in body] == ["orbitmq", "nats", "redis"]
    orbit, nats, redis = body
    assert "6,000" in orbit and " 6.0 " in orbit  # msgs/s and MB/s (1000-byte bodies)
    assert "1.50" in nats  # 6,000 / 4,000
    assert "0.75" in redis  # 6,000 / 8,000
    assert "0.95" in orbit and "0.50" in orbit  # client and server cores


def test_skipped_peer_row_says_why() -> None:
    absent = Measurement("W1", "1 sender", "nats", skipped=True, note="nats-server not installed")
    text = render_table([m("orbitmq", 100), absent])
    assert "skipped: nats-server not installed" in text


def test_json_document_has_ratio_and_no_nan() -> None:
    doc = json_document([m("orbitmq", 100), m("nats", 50)], {"duration_s": 2})
    raw = orjson.dumps(doc)  # orjson refuses NaN silently as null; make sure the shape is right
    back = orjson.loads(raw)
    assert back["meta"] == {"duration_s": 2}
    assert [r["system"] for r in back["results"]] == ["orbitmq", "nats"]
    assert back["results"][1]["orbitmq_ratio"] == 2.0
    assert back["results"][0]["msgs_per_s"] == 50.0


def test_fmt_number() -> None:
    assert fmt_number(12345.6) == "12,346"
    assert fmt_number(None) == "-"
    assert fmt_number(float("nan")) == "-"
    assert fmt_number(1.234, digits=2) == "1.23"


def test_multi_line_notes_become_one_line() -> None:
    from orbitmq.bench.table import short_note

    note = "serve exited with code 1\n--- serve.err ---\nTraceback ...\n  File x\nModuleNotFoundError: y\n"
    assert short_note(note) == "serve exited with code 1 ... ModuleNotFoundError: y"
    assert len(short_note("x" * 500)) == 160


def test_saved_json_renders_the_same_table() -> None:
    from orbitmq.bench.result import measurement_from_dict

    original = [
        m("orbitmq", 100),
        m("nats", 50),
        Measurement("W1", "-", "redis", skipped=True, note="absent"),
    ]
    original[0].server_wait, original[0].client_wait = 0.02, 0.31  # the run-queue waits survive too
    doc = orjson.loads(orjson.dumps(json_document(original, {})))
    again = [measurement_from_dict(r) for r in doc["results"]]
    assert render_table(again) == render_table(original)


def test_median_run_is_kept_with_all_figures_in_the_note() -> None:
    from orbitmq.bench.runner import median_run

    runs = [m("nats", 300), m("nats", 100), m("nats", 200)]
    chosen = median_run(runs)
    assert chosen.messages == 200
    assert "median of 3 runs (150, 50, 100)" in chosen.note
    absent = Measurement("W1", "-", "nats", skipped=True, note="gone")
    assert median_run([absent]) is absent
    assert median_run([absent, runs[1]]) is runs[1]


def test_server_cpu_per_message() -> None:
    x = m("orbitmq", 20_000, seconds=2.0)  # 10,000 msgs/s at 0.5 server cores
    assert x.server_us_per_msg == 50.0
    assert Measurement("W1", "-", "nats").server_us_per_msg is None


def test_w6_and_w7_tables_say_where_their_figures_are() -> None:
    w6 = Measurement("W6", "SYNC_MASTER 4 senders", "orbitmq-raw", messages=100, seconds=1.0, note="lag")
    w7 = Measurement("W7", "batch read -> noop", "orbitmq-spark", messages=100, seconds=1.0)
    assert "W7:" not in render_table([w6]) and "replication lag" in render_table([w6])
    assert "Arrow ceiling" in render_table([w7])


def test_run_queue_wait_beside_every_figure_and_starved_runs_flagged() -> None:
    quiet, busy = m("orbitmq", 10_000), m("nats", 10_000)
    quiet.server_wait, quiet.client_wait = 0.02, 0.05
    busy.server_wait, busy.client_wait = 0.31, 0.04
    assert not quiet.starved and busy.starved
    text = render_table([quiet, busy])
    assert "2/5" in text and "31/4 !" in text
    doc = orjson.loads(orjson.dumps(json_document([quiet, busy], {})))
    assert [r["starved"] for r in doc["results"]] == [False, True]
    assert doc["results"][1]["server_run_queue_wait"] == 0.31
