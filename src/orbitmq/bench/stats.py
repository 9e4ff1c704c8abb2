"""Latency statistics for benchmark runs: a bounded sample of latencies and its percentiles.

Pure arithmetic: no clocks, no I/O. Latencies are recorded in nanoseconds (ints) and summarised in
microseconds. Only numbers live here; what was measured (and how) is the workloads' business.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) of already sorted values, nearest-rank method.

    Nearest rank (not interpolation) so that p100 is the max and every reported figure is a latency
    that was actually observed. An empty sequence gives NaN.
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    n = len(sorted_values)
    if n == 0:
        return math.nan
    rank = max(1, math.ceil(q / 100.0 * n))
    return float(sorted_values[rank - 1])


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Percentiles in microseconds over `count` samples (NaN when there were none)."""

    count: int
    mean_us: float
    p50_us: float
    p99_us: float
    max_us: float

    @classmethod
    def empty(cls) -> LatencySummary:
        return cls(0, math.nan, math.nan, math.nan, math.nan)

    def to_dict(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "mean_us": self.mean_us,
            "p50_us": self.p50_us,
            "p99_us": self.p99_us,
            "max_us": self.max_us,
        }


class LatencyRecorder:
    """Collects latencies (ns); keeps at most `capacity` by reservoir sampling, but the max exactly.

    A 30 s run at 20k msgs/s is 600k samples; the reservoir bounds memory while the percentiles stay
    unbiased. The exact max and mean are kept separately because a reservoir can miss the one outlier.
    """

    def __init__(self, capacity: int = 200_000, *, seed: int = 0x5EED) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._samples: list[int] = []
        self._seen = 0
        self._total_ns = 0
        self._max_ns = 0
        self._random = random.Random(seed)

    @property
    def count(self) -> int:
        return self._seen

    def record(self, latency_ns: int) -> None:
        self._seen += 1
        self._total_ns += latency_ns
        self._max_ns = max(self._max_ns, latency_ns)
        if len(self._samples) < self._capacity:
            self._samples.append(latency_ns)
            return
        slot = self._random.randrange(self._seen)
        if slot < self._capacity:
            self._samples[slot] = latency_ns

    def record_many(self, latencies_ns: Iterable[int]) -> None:
        for latency in latencies_ns:
            self.record(latency)

    def summary(self) -> LatencySummary:
        if self._seen == 0:
            return LatencySummary.empty()
        ordered = sorted(self._samples)
        return LatencySummary(
            count=self._seen,
            mean_us=self._total_ns / self._seen / 1000.0,
            p50_us=percentile(ordered, 50) / 1000.0,
            p99_us=percentile(ordered, 99) / 1000.0,
            max_us=self._max_ns / 1000.0,
        )
