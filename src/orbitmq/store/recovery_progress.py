"""Progress of store recovery, which can take minutes on a large store after a crash.

`recover()` reports after every commit-log segment of each phase: "scan" (records checked, CRCs
included, to find the valid end) and "dispatch" (consume queues and index rebuilt from the log). Any
callable taking a `RecoveryStep` can listen (a progress bar, a metric); the default, `LoggingProgress`,
logs a line every 10 % or every 5 s, whichever comes first, and stays silent for small stores.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("orbitmq.store.recovery")


@dataclass(frozen=True, slots=True)
class RecoveryStep:
    phase: str  # "scan" or "dispatch"
    done: int  # commit-log bytes this phase has processed so far
    total: int  # commit-log bytes this phase covers (the scan's: at most, until its last step)

    @property
    def fraction(self) -> float:
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)


RecoveryProgress = Callable[[RecoveryStep], None]

_PHASE_TEXT = {"scan": "checking commit log records", "dispatch": "rebuilding consume queues and index"}


class LoggingProgress:
    """Log lines for a recovery worth watching (at least `min_bytes` to process)."""

    def __init__(
        self,
        store: str,
        monotonic: Callable[[], float],
        *,
        min_bytes: int = 256 * 1024 * 1024,
        every_fraction: float = 0.10,
        every_seconds: float = 5.0,
    ) -> None:
        self.store = store
        self.monotonic = monotonic
        self.min_bytes = min_bytes
        self.every_fraction = every_fraction
        self.every_seconds = every_seconds
        self._phase = ""
        self._last_fraction = 0.0
        self._last_time = 0.0

    def __call__(self, step: RecoveryStep) -> None:
        if step.total < self.min_bytes:
            return
        now = self.monotonic()
        if step.phase != self._phase:
            self._phase, self._last_fraction, self._last_time = step.phase, 0.0, now
        fraction = step.fraction
        due = fraction >= 1.0 or (
            fraction - self._last_fraction >= self.every_fraction
            or now - self._last_time >= self.every_seconds
        )
        if not due or fraction <= self._last_fraction:
            return
        self._last_fraction, self._last_time = fraction, now
        log.info(
            "store %s recovery: %s %3.0f%% (%d of %d MiB)",
            self.store,
            _PHASE_TEXT.get(step.phase, step.phase),
            fraction * 100,
            step.done >> 20,
            step.total >> 20,
        )
