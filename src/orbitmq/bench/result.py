"""One measured figure: what ran, against which system, how fast, and who burned the CPU.

Plain data with a JSON form; nothing here measures or prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orbitmq.bench.stats import LatencySummary

# A process that waited for a CPU more than this share of a window was starved: its figure is flagged.
STARVED_WAIT = 0.10

# Which figure decides the ratio for a workload: throughput (higher is better) or latency (lower is).
LATENCY_WORKLOADS = frozenset({"W4", "W8", "W10"})


@dataclass(slots=True)
class Measurement:
    workload: str  # "W1"
    case: str  # "1 sender", "pipelined 256", ...
    system: str  # "orbitmq", "orbitmq-raw", "nats", "redis"
    messages: int = 0
    seconds: float = 0.0
    body_size: int = 0
    latency: LatencySummary = field(default_factory=LatencySummary.empty)
    server_cores: float | None = None
    client_cores: float | None = None
    # Run-queue wait (/proc/PID/schedstat) as a share of the window: the most-waiting server process,
    # and the bench process. Above STARVED_WAIT the figure measures the box's other load as much as us.
    server_wait: float | None = None
    client_wait: float | None = None
    errors: int = 0
    # Extra named figures (W8 recovery seconds, W10 RSS, W4 achieved rate...).
    extra: dict[str, float] = field(default_factory=dict)
    # Why there is no figure ("needs replication", "nats-server not installed") or a caveat.
    note: str = ""
    skipped: bool = False

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else math.nan

    @property
    def mb_per_s(self) -> float:
        return self.msgs_per_s * self.body_size / 1_000_000

    @property
    def server_us_per_msg(self) -> float | None:
        """Server CPU microseconds per message: unlike msgs/s, barely moved by a CPU-starved box."""
        if self.server_cores is None or self.messages <= 0 or self.seconds <= 0:
            return None
        return self.server_cores * self.seconds / self.messages * 1e6

    @property
    def starved(self) -> bool:
        return any(w is not None and w > STARVED_WAIT for w in (self.server_wait, self.client_wait))

    def key_figure(self) -> float:
        """The figure the ratio compares: p99 latency for latency workloads, msgs/s otherwise."""
        if self.workload in LATENCY_WORKLOADS:
            if "seconds_to_serve" in self.extra:
                return self.extra["seconds_to_serve"]
            return self.latency.p99_us
        return self.msgs_per_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "case": self.case,
            "system": self.system,
            "messages": self.messages,
            "seconds": self.seconds,
            "body_size": self.body_size,
            "msgs_per_s": None if self.skipped else _finite(self.msgs_per_s),
            "mb_per_s": None if self.skipped else _finite(self.mb_per_s),
            "latency": {k: _finite(v) for k, v in self.latency.to_dict().items()},
            "server_cores": self.server_cores,
            "server_us_per_msg": self.server_us_per_msg,
            "client_cores": self.client_cores,
            "server_run_queue_wait": self.server_wait,
            "client_run_queue_wait": self.client_wait,
            "starved": self.starved,
            "errors": self.errors,
            "extra": dict(self.extra),
            "note": self.note,
            "skipped": self.skipped,
        }


def measurement_from_dict(d: Mapping[str, Any]) -> Measurement:
    """The inverse of `Measurement.to_dict` (to re-render a saved `--json` run as a table)."""
    lat = d.get("latency") or {}

    def num(key: str) -> float:
        value = lat.get(key)
        return math.nan if value is None else float(value)

    return Measurement(
        workload=str(d["workload"]),
        case=str(d["case"]),
        system=str(d["system"]),
        messages=int(d.get("messages") or 0),
        seconds=float(d.get("seconds") or 0.0),
        body_size=int(d.get("body_size") or 0),
        latency=LatencySummary(
            int(lat.get("count") or 0), num("mean_us"), num("p50_us"), num("p99_us"), num("max_us")
        ),
        server_cores=d.get("server_cores"),
        client_cores=d.get("client_cores"),
        server_wait=d.get("server_run_queue_wait"),
        client_wait=d.get("client_run_queue_wait"),
        errors=int(d.get("errors") or 0),
        extra={str(k): float(v) for k, v in (d.get("extra") or {}).items()},
        note=str(d.get("note") or ""),
        skipped=bool(d.get("skipped")),
    )


def _finite(value: float | int) -> float | int | None:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def ratio(reference: Measurement, other: Measurement) -> float | None:
    """How much better `reference` (orbitmq) is than `other`: > 1 means orbitmq wins.

    Throughput: reference / other. Latency (lower is better): other / reference.
    """
    if reference.skipped or other.skipped:
        return None
    a, b = reference.key_figure(), other.key_figure()
    if not (math.isfinite(a) and math.isfinite(b)) or a <= 0 or b <= 0:
        return None
    if reference.workload in LATENCY_WORKLOADS:
        return b / a
    return a / b
