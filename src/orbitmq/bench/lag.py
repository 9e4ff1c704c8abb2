"""Replication lag statistics (W6): samples of a master's and its slave's commit-log max offsets, and
their summary in bytes and, through the master's write rate, in milliseconds.

Pure arithmetic and parsing: no clocks, no sockets. The sampler that asks the brokers
(GET_BROKER_RUNTIME_INFO) lives in `replication.py`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orbitmq.bench.stats import percentile

RUNTIME_KEY = "commitLogMaxOffset"


def commit_log_max_offset(runtime_info: Mapping[str, Any]) -> int:
    """The "commitLogMaxOffset" of a GET_BROKER_RUNTIME_INFO table (the KVTable's "table"), or of the
    whole decoded body ({"table": {...}}); ValueError when it is missing or not a number."""
    table = runtime_info.get("table", runtime_info)
    if not isinstance(table, Mapping) or RUNTIME_KEY not in table:
        raise ValueError(f"runtime info has no {RUNTIME_KEY}")
    try:
        return int(str(table[RUNTIME_KEY]))
    except ValueError:
        raise ValueError(f"{RUNTIME_KEY} is not an integer: {table[RUNTIME_KEY]!r}") from None


@dataclass(frozen=True, slots=True)
class LagSample:
    """One reading: seconds since the run started, the master's and the slave's commit-log max offsets.

    The two offsets are asked for concurrently, so they are not one atomic snapshot: a slave read a
    moment after its master can be ahead of that reading; such a sample counts as zero lag."""

    t: float
    master_offset: int
    slave_offset: int

    @property
    def lag_bytes(self) -> int:
        return max(0, self.master_offset - self.slave_offset)


@dataclass(frozen=True, slots=True)
class LagSummary:
    samples: int
    mean_bytes: float
    p99_bytes: float
    max_bytes: float
    # Commit-log bytes the master appended per second over the samples: what turns bytes into time.
    bytes_per_s: float

    @classmethod
    def empty(cls) -> LagSummary:
        return cls(0, math.nan, math.nan, math.nan, math.nan)

    def ms(self, lag_bytes: float) -> float:
        """How long the master takes to write `lag_bytes` at the measured rate (NaN at rate 0)."""
        if not math.isfinite(self.bytes_per_s) or self.bytes_per_s <= 0:
            return math.nan
        return lag_bytes / self.bytes_per_s * 1000.0

    @property
    def mean_ms(self) -> float:
        return self.ms(self.mean_bytes)

    @property
    def p99_ms(self) -> float:
        return self.ms(self.p99_bytes)

    @property
    def max_ms(self) -> float:
        return self.ms(self.max_bytes)

    def extra(self) -> dict[str, float]:
        """The figures for `Measurement.extra` (JSON output)."""
        return {
            "lag_samples": float(self.samples),
            "lag_mean_bytes": self.mean_bytes,
            "lag_p99_bytes": self.p99_bytes,
            "lag_max_bytes": self.max_bytes,
            "lag_mean_ms": self.mean_ms,
            "lag_p99_ms": self.p99_ms,
            "lag_max_ms": self.max_ms,
            "master_bytes_per_s": self.bytes_per_s,
        }

    def describe(self) -> str:
        """One line for the table's notes."""
        if self.samples == 0:
            return "replication lag: no samples"

        def kb(v: float) -> str:
            return f"{v / 1000:,.1f}"

        def ms(v: float) -> str:
            return "-" if not math.isfinite(v) else f"{v:,.2f}"

        return (
            f"replication lag mean/p99/max {kb(self.mean_bytes)}/{kb(self.p99_bytes)}/"
            f"{kb(self.max_bytes)} KB = {ms(self.mean_ms)}/{ms(self.p99_ms)}/{ms(self.max_ms)} ms "
            f"at {ms(self.bytes_per_s / 1e6)} MB/s of commit log ({self.samples} samples)"
        )


def active_window(samples: Sequence[LagSample]) -> list[LagSample]:
    """The samples taken while the master was being written: from the first sample whose master offset
    moved since the previous one to the last such sample. Idle readings before the load (topic
    creation) and after it (the slave catching up) would otherwise dilute the lag and the rate.
    Samples with no movement at all are returned as they are (an idle or a foreign cluster)."""
    ordered = sorted(samples, key=lambda s: s.t)
    moved = [i for i in range(1, len(ordered)) if ordered[i].master_offset != ordered[i - 1].master_offset]
    if not moved:
        return ordered
    return ordered[moved[0] : moved[-1] + 1]


def summarize_lag(samples: Sequence[LagSample]) -> LagSummary:
    """Mean, p99 (nearest rank) and max lag in bytes over the active window (`active_window`), and the
    master's write rate over that window."""
    window = active_window(samples)
    if not window:
        return LagSummary.empty()
    lags = sorted(s.lag_bytes for s in window)
    first, last = window[0], window[-1]
    span = last.t - first.t
    rate = (last.master_offset - first.master_offset) / span if span > 0 else math.nan
    return LagSummary(
        samples=len(lags),
        mean_bytes=sum(lags) / len(lags),
        p99_bytes=percentile(lags, 99),
        max_bytes=float(lags[-1]),
        bytes_per_s=rate,
    )
