"""What the churn run watches in the broker process: RSS, anonymous RSS, open files, threads (from
/proc/PID) and asyncio tasks (the broker's `orbitmq_asyncio_tasks` gauge), and how each trends after
warm-up (a least-squares line; its slope per hour, and whether the growth it predicts over the watched
window stays within a tolerance of the level).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

# series name -> (absolute tolerance, fraction of the mean level): growth beyond both is a leak.
# RSS (file pages included) grows with the commit log the run writes, so the leak check uses anonymous
# memory; the total is reported.
SERIES: dict[str, tuple[float, float] | None] = {
    "rss_mib": None,
    "rss_anon_mib": (16.0, 0.10),
    "fds": (50.0, 0.10),
    "threads": (4.0, 0.10),
    "tasks": (50.0, 0.10),
    "connections": None,  # client connections: what the open files follow without leaking
}


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the run started
    values: dict[str, float]


def read_proc(pid: int) -> dict[str, float]:
    """RSS and anonymous RSS (MiB), threads and open file descriptors of `pid`, from /proc."""
    values: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key == "VmRSS":
                values["rss_mib"] = int(rest.split()[0]) / 1024
            elif key == "RssAnon":
                values["rss_anon_mib"] = int(rest.split()[0]) / 1024
            elif key == "Threads":
                values["threads"] = float(rest.strip())
    values["fds"] = float(len(os.listdir(f"/proc/{pid}/fd")))
    return values


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over t (units of y per second); 0 with fewer than two distinct t."""
    n = len(points)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return sum((t - mean_t) * (y - mean_y) for t, y in points) / var


@dataclass
class Trend:
    name: str
    first: float
    last: float
    mean: float
    per_hour: float
    growth: float  # what the fitted line predicts over the watched window
    tolerance: float | None  # None: reported, not checked

    @property
    def ok(self) -> bool:
        return self.tolerance is None or self.growth <= self.tolerance

    def describe(self) -> str:
        verdict = "" if self.tolerance is None else (" ok" if self.ok else " GROWS")
        limit = "" if self.tolerance is None else f" (allowed {self.tolerance:.1f})"
        return (
            f"{self.name:<13} first {self.first:9.1f}  last {self.last:9.1f}  mean {self.mean:9.1f}  "
            f"slope {self.per_hour:+10.2f}/h  growth over window {self.growth:+8.2f}{limit}{verdict}"
        )


@dataclass
class Watch:
    """Samples of one process; `trends(warmup)` fits the ones taken after `warmup` seconds."""

    pid: int
    samples: list[Sample] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def add(self, extra: dict[str, float]) -> Sample:
        values = read_proc(self.pid)
        values.update(extra)
        sample = Sample(time.monotonic() - self.started, values)
        self.samples.append(sample)
        return sample

    def trends(self, warmup: float) -> list[Trend]:
        after = [s for s in self.samples if s.t >= warmup]
        out: list[Trend] = []
        if len(after) < 2:
            return out
        window = after[-1].t - after[0].t
        for name, rule in SERIES.items():
            points = [(s.t, s.values[name]) for s in after if name in s.values]
            if len(points) < 2:
                continue
            per_second = slope(points)
            mean = sum(y for _, y in points) / len(points)
            tolerance = None if rule is None else max(rule[0], rule[1] * mean)
            out.append(
                Trend(
                    name=name,
                    first=points[0][1],
                    last=points[-1][1],
                    mean=mean,
                    per_hour=per_second * 3600,
                    growth=per_second * window,
                    tolerance=tolerance,
                )
            )
        return out
