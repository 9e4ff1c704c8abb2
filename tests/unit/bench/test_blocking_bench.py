"""`orbitmq bench blocking`'s figures: the median round of each system and orbitmq's ratio."""

from __future__ import annotations

import pytest

from orbitmq.bench import blocking_bench
from orbitmq.bench.blocking_bench import Round, Shape, System, measure, report


def test_the_median_round_carries_its_own_cpu_and_the_ratio_is_of_medians() -> None:
    ours = System(
        "orbitmq Producer", [Round(7000, 70, 55, (0.02, 0.05)), Round(8000, 68, 54), Round(6000, 80, 60)]
    )
    theirs = System("redis-py", [Round(9000, 40, 60), Round(10_000, 41, 61)])
    assert ours.median() == Round(7000, 70, 55, (0.02, 0.05))
    assert theirs.median() == Round(9000, 40, 60)  # of two: the lower (no invented average)
    lines = report([ours, theirs])
    assert lines[1].split()[:6] == ["orbitmq", "Producer", "7,000", "70", "55", "2/5"]
    assert lines[-1] == "orbitmq Producer / redis-py: 0.78"


def test_measure_counts_calls_and_cpu_per_call() -> None:
    calls = []
    result = measure(lambda: calls.append(1), 500, [])
    assert len(calls) == 500 and result.rate > 0 and result.server_us == 0.0 and result.client_us >= 0.0


class _Clock:
    """perf_counter advancing one second per reading: each measured round lasts exactly 1 s."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


def test_a_batch_call_counts_every_message_it_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocking_bench, "time", _Clock())
    assert measure(lambda: None, 200, []).rate == 200
    assert measure(lambda: None, 200, [], per_call=32).rate == 200 * 32  # per message, not per call


def test_each_shape_names_both_rows() -> None:
    assert (Shape().orbitmq_name(), Shape().redis_name()) == ("orbitmq Producer", "redis-py Redis.xadd")
    assert Shape(orderly=True).orbitmq_name() == "orbitmq send_orderly"
    assert (Shape(batch=32).orbitmq_name(), Shape(batch=32).redis_name()) == (
        "orbitmq send_batch(32)",
        "redis-py pipeline 32 xadd",
    )
