"""A rich progress bar for start-up recovery when the broker runs on a terminal.

The store reports a `RecoveryStep` per commit-log segment it checks or re-dispatches; off a terminal
its LoggingProgress writes log lines instead. Recoveries under `min_bytes` draw nothing.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from orbitmq.store.recovery_progress import RecoveryStep

PHASES = {"scan": "checking the commit log", "dispatch": "rebuilding queues and index"}


class RecoveryBar:
    def __init__(self, stream: TextIO | None = None, *, min_bytes: int = 64 << 20) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.min_bytes = min_bytes
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __call__(self, step: RecoveryStep) -> None:
        if step.total < self.min_bytes:
            return
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("recovery: {task.description}"),
                BarColumn(),
                DownloadColumn(binary_units=True),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self._progress.start()
        task = self._tasks.get(step.phase)
        if task is None:
            task = self._tasks[step.phase] = self._progress.add_task(
                PHASES.get(step.phase, step.phase), total=step.total
            )
        self._progress.update(task, completed=step.done, total=step.total)

    def close(self) -> None:
        progress, self._progress = self._progress, None
        if progress is not None:
            progress.stop()


def terminal_recovery_bar() -> RecoveryBar | None:
    """A bar when stderr is a terminal, else None (the store's log lines are used)."""
    return RecoveryBar() if sys.stderr.isatty() else None
