"""Start-up recovery progress: a rich progress bar on a terminal, a log line every few seconds otherwise.

The store calls `reporter(phase, done_bytes, total_bytes)` while it scans the commit log and re-dispatches
it (store/recovery.py); on a multi-GiB store after a crash that takes a while, and an operator should see
it move. rich is imported only when stderr is a terminal.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

log = logging.getLogger("orbitmq.broker")

PHASES = {"scan": "checking the commit log", "dispatch": "rebuilding queues and index"}


class RecoveryReporter:
    def __init__(self, stream: TextIO | None = None, *, log_every: float = 5.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.log_every = log_every
        self._last_log = time.monotonic()
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        if total <= 0:
            return
        if self.stream.isatty():
            self._draw(phase, done, total)
            return
        now = time.monotonic()
        if now - self._last_log >= self.log_every or done >= total:
            self._last_log = now
            log.info(
                "recovery: %s %.1f/%.1f MiB (%.0f%%)",
                PHASES.get(phase, phase),
                done / 2**20,
                total / 2**20,
                100 * done / total,
            )

    def _draw(self, phase: str, done: int, total: int) -> None:
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(binary_units=True),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self._bar.start()
        task = self._tasks.get(phase)
        if task is None:
            task = self._tasks[phase] = self._bar.add_task(PHASES.get(phase, phase), total=total)
        self._bar.update(task, completed=done, total=total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
