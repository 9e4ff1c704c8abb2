"""Percentiles and the latency reservoir of orbitmq.bench.stats."""

from __future__ import annotations

import math

import pytest

from orbitmq.bench.stats import LatencyRecorder, percentile


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile(values, 0) == 1.0
    assert percentile([7.0], 99) == 7.0


def test_percentile_of_nothing_is_nan_and_bad_q_is_rejected() -> None:
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], 101)


def test_recorder_summary_in_microseconds() -> None:
    rec = LatencyRecorder()
    for us in range(1, 1001):
        rec.record(us * 1000)
    s = rec.summary()
    assert s.count == 1000
    assert s.p50_us == 500.0
    assert s.p99_us == 990.0
    assert s.max_us == 1000.0
    assert s.mean_us == pytest.approx(500.5)


def test_reservoir_bounds_memory_but_keeps_exact_count_max_and_mean() -> None:
    rec = LatencyRecorder(capacity=100)
    for i in range(10_000):
        rec.record(1000 if i != 5_000 else 9_000_000)
    s = rec.summary()
    assert s.count == 10_000
    assert s.max_us == 9000.0  # the single outlier survives even if the reservoir dropped it
    assert s.p50_us == 1.0
    assert s.mean_us == pytest.approx((9999 * 1000 + 9_000_000) / 10_000 / 1000)
    assert len(rec._samples) == 100


def test_empty_summary_is_nan() -> None:
    s = LatencyRecorder().summary()
    assert s.count == 0
    assert math.isnan(s.p99_us)
