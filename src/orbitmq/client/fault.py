"""Producer latency fault tolerance (fact sheet 7.6, MQFaultStrategy).

After each send attempt the producer records how long the broker took; a slow broker (or one that
failed, "isolation") is marked unavailable for a window computed from two tables. While a broker is in
its window, queue selection skips it; when the window ends it is picked again.

Pure: time comes from an injected `Clock`; no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from orbitmq.common.clock import SYSTEM_CLOCK, Clock

LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_DURATION_MS: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
ISOLATION_LATENCY_MS = 30000  # a failed send counts as this slow: unavailable for the largest window


@dataclass(slots=True)
class FaultItem:
    broker_name: str
    latency_ms: int
    start_ms: int  # available again from this wall-clock time

    def available(self, now_ms: int) -> bool:
        return now_ms >= self.start_ms


class LatencyFaultTolerance:
    """Fault items per broker name, with the rules for picking one when every broker looks bad."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK, rng: random.Random | None = None) -> None:
        self.clock = clock
        self.items: dict[str, FaultItem] = {}
        self._worst = 0
        self._rng = rng or random.Random()

    def update(self, broker_name: str, latency_ms: int, not_available_ms: int) -> None:
        self.items[broker_name] = FaultItem(broker_name, latency_ms, self.clock.now_ms() + not_available_ms)

    def is_available(self, broker_name: str) -> bool:
        item = self.items.get(broker_name)
        return item is None or item.available(self.clock.now_ms())

    def remove(self, broker_name: str) -> None:
        self.items.pop(broker_name, None)

    def pick_one_at_least(self) -> str | None:
        """A broker among the better half of the known ones (available first, then faster, then the one
        whose window ends first), rotating so that the same one is not hammered."""
        if not self.items:
            return None
        now = self.clock.now_ms()
        items = list(self.items.values())
        self._rng.shuffle(items)
        items.sort(key=lambda it: (not it.available(now), it.latency_ms, it.start_ms))
        half = len(items) // 2
        if half <= 0:
            return items[0].broker_name
        self._worst += 1
        return items[self._worst % half].broker_name


def not_available_duration(
    latency_ms: int,
    latency_max: Sequence[int] = LATENCY_MAX_MS,
    durations: Sequence[int] = NOT_AVAILABLE_DURATION_MS,
) -> int:
    """The window for the largest table step the latency reaches (0 below the first step)."""
    for i in range(len(latency_max) - 1, -1, -1):
        if latency_ms >= latency_max[i]:
            return durations[i]
    return 0


class FaultStrategy:
    """Turns measured latencies into fault items; only active when `enabled` (as RocketMQ's
    `sendLatencyFaultEnable`, default off)."""

    def __init__(
        self,
        *,
        enabled: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        latency_max: Sequence[int] = LATENCY_MAX_MS,
        not_available_durations: Sequence[int] = NOT_AVAILABLE_DURATION_MS,
        rng: random.Random | None = None,
    ) -> None:
        if len(latency_max) != len(not_available_durations):
            raise ValueError("latency_max and not_available_durations must have the same length")
        self.enabled = enabled
        self.latency_max = tuple(latency_max)
        self.durations = tuple(not_available_durations)
        self.tolerance = LatencyFaultTolerance(clock, rng)

    def update_fault_item(self, broker_name: str, latency_ms: int, *, isolation: bool) -> None:
        if not self.enabled:
            return
        latency = ISOLATION_LATENCY_MS if isolation else latency_ms
        self.tolerance.update(
            broker_name, latency_ms, not_available_duration(latency, self.latency_max, self.durations)
        )
