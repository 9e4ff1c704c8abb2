"""The live progress line: a rich progress bar on a real terminal (elapsed time against the case's time
limit, messages, rate), a plain line every few seconds otherwise. `tty=True` keeps the simple
carriage-return line (for streams that only pretend to be terminals).

Writes to stderr so that `--json` on stdout stays machine-readable.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None, plain_every: float = 5.0):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        # rich only when the terminal was detected, not when a caller forces tty=True.
        self.rich = tty is None and self.tty
        self._bar: Any = None
        self._task: Any = None
        self.plain_every = plain_every
        self.label = ""
        self.count = 0
        self.phase = ""
        self._started = time.monotonic()
        self._last_plain = 0.0
        self._width = 0
        self.limit_seconds = 0.0

    def begin(self, label: str, limit_seconds: float, phase: str = "") -> None:
        self.label = label
        self.limit_seconds = limit_seconds
        self.count = 0
        self.phase = phase
        self._started = time.monotonic()
        self._last_plain = self._started
        if self.rich:
            self._open_bar()
        elif not self.tty:
            self._write_line(f"{label}: {phase or 'running'} (up to {limit_seconds:.0f} s)")

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self.count = 0
        self._started = time.monotonic()
        if self.rich:
            self.tick()
        elif not self.tty:
            self._write_line(f"{self.label}: {phase}")

    def text(self) -> str:
        elapsed = time.monotonic() - self._started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        phase = f" [{self.phase}]" if self.phase else ""
        return f"{self.label}{phase}  {elapsed:5.1f} s  {self.count:,} msgs  {rate:,.0f} msgs/s"

    def tick(self) -> None:
        """Refresh the line (called periodically by the runner)."""
        if self.rich:
            if self._bar is None:
                self._open_bar()
            elapsed = time.monotonic() - self._started
            self._bar.update(
                self._task,
                description=self.label + (f" [{self.phase}]" if self.phase else ""),
                completed=min(elapsed, self.limit_seconds or elapsed),
                total=self.limit_seconds or None,
                count=self.count,
                rate=self.count / elapsed if elapsed > 0 else 0.0,
            )
        elif self.tty:
            line = self.text()
            pad = max(0, self._width - len(line))
            self.stream.write("\r" + line + " " * pad)
            self.stream.flush()
            self._width = len(line)
        elif time.monotonic() - self._last_plain >= self.plain_every:
            self._last_plain = time.monotonic()
            self._write_line(self.text())

    def _open_bar(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        if self._bar is None:
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[count]:>12,} msgs"),
                TextColumn("{task.fields[rate]:>10,.0f} msgs/s"),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self._bar.start()
        else:
            self._bar.remove_task(self._task)
        self._task = self._bar.add_task(self.label, total=self.limit_seconds or None, count=0, rate=0.0)

    def end(self, summary: str) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self.tty:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
        self._write_line(summary)

    def _write_line(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()
