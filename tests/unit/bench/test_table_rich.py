"""The rich rendering of the bench table (orbitmq.bench.table.render_rich_table): same rows and notes."""

from __future__ import annotations

from orbitmq.bench.result import Measurement
from orbitmq.bench.stats import LatencySummary
from orbitmq.bench.table import render_rich_table


def m(system: str, msgs: int) -> Measurement:
    return Measurement(
        "W1",
        "1 sender",
        system,
        messages=msgs,
        seconds=2.0,
        body_size=1000,
        latency=LatencySummary(msgs, 50.0, 40.0, 100.0, 500.0),
        server_cores=0.5,
        client_cores=0.95,
    )


def test_rich_table_has_the_same_rows_and_notes() -> None:
    absent = Measurement("W1", "1 sender", "redis", skipped=True, note="redis-server not installed")
    text = render_rich_table([m("nats", 8_000), m("orbitmq", 12_000), absent], width=200)
    assert "│" in text or "┃" in text  # drawn by rich
    assert "1.50" in text and "6,000" in text
    assert "skipped: redis-server not installed" in text
    assert "orbitmq × : > 1 means orbitmq is better" in text
