"""CPU and memory accounting of processes from /proc: who was busy while a figure was measured.

A figure means little without knowing whether the server or the client was the limit, so each carries
the cores each side used. Parsing is pure (`ProcessCpu` reads /proc); elsewhere than Linux, None.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


def clock_ticks_per_second() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 100


def parse_stat_cpu_ticks(stat_text: str) -> int:
    """utime + stime (clock ticks) from the text of /proc/<pid>/stat.

    The command name (field 2) is in parentheses and may itself contain spaces and parentheses, so
    fields are counted from the LAST ')'; utime and stime are fields 14 and 15 (1-based).
    """
    close = stat_text.rfind(")")
    if close < 0:
        raise ValueError("not a /proc/<pid>/stat line: no ')'")
    fields = stat_text[close + 2 :].split()
    # fields[0] is field 3 (state), so field k is fields[k - 3].
    if len(fields) < 13:
        raise ValueError("not a /proc/<pid>/stat line: too few fields")
    return int(fields[11]) + int(fields[12])


def parse_stat_ppid(stat_text: str) -> int:
    """The parent pid (field 4) from the text of /proc/<pid>/stat."""
    close = stat_text.rfind(")")
    fields = stat_text[close + 2 :].split()
    return int(fields[1])


def parse_status_rss_kib(status_text: str) -> int | None:
    """VmRSS in KiB from the text of /proc/<pid>/status (None for a zombie or kernel thread)."""
    for line in status_text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


def parse_status_kib(status_text: str, field: str) -> int | None:
    """A "Name:  123 kB" field of /proc/<pid>/status in KiB (RssAnon, RssFile, ...), None if absent."""
    prefix = field + ":"
    for line in status_text.splitlines():
        if line.startswith(prefix):
            return int(line.split()[1])
    return None


def parse_schedstat_wait_ns(schedstat_text: str) -> int:
    """Run-queue wait (ns) from the text of /proc/<pid>/schedstat: "run_ns wait_ns timeslices".

    The time the task was runnable but waited for a CPU: on a shared box, the share of a measurement
    window a process spent queued behind others' work (its figures then measure the box, not it).
    """
    fields = schedstat_text.split()
    if len(fields) < 2:
        raise ValueError("not a /proc/<pid>/schedstat line")
    return int(fields[1])


def cores_used(cpu_seconds: float, wall_seconds: float) -> float:
    """Average number of cores busy over a wall-clock interval."""
    if wall_seconds <= 0:
        return 0.0
    return cpu_seconds / wall_seconds


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def descendants(pid: int) -> list[int]:
    """pid's live descendants (children, grandchildren...), read from /proc; [] when /proc is absent."""
    parent_of: dict[int, int] = {}
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        text = _read(entry / "stat")
        if text is None:
            continue
        try:
            parent_of[int(entry.name)] = parse_stat_ppid(text)
        except (ValueError, IndexError):
            continue
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parent_of.items() if ppid == parent]
        found += children
        frontier += children
    return found


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) pid has used so far, None when it cannot be read."""
    text = _read(PROC / str(pid) / "stat")
    if text is None:
        return None
    try:
        return parse_stat_cpu_ticks(text) / clock_ticks_per_second()
    except (ValueError, IndexError):
        return None


def run_queue_wait_seconds(pid: int) -> float | None:
    """Seconds pid's main thread (an event loop) has waited runnable for a CPU; None if unreadable."""
    text = _read(PROC / str(pid) / "schedstat")
    if text is None:
        return None
    try:
        return parse_schedstat_wait_ns(text) / 1e9
    except ValueError:
        return None


def thread_wait_seconds(pid: int) -> float | None:
    """Seconds all of pid's threads together have waited runnable for a CPU (/proc/PID/task/*/schedstat).

    For a JVM the main thread only waits in join(): the work (and the queueing) is on other threads.
    Summed over threads, the share of a window can exceed 1 (several threads queued at once)."""
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return None
    total = 0
    for task in tasks:
        text = _read(task / "schedstat")
        if text is None:
            continue  # the thread ended meanwhile
        try:
            total += parse_schedstat_wait_ns(text)
        except ValueError:
            continue
    return total / 1e9


def rss_split_mib(pid: int) -> tuple[float, float] | None:
    """(RssAnon, RssFile) in MiB: the process's own memory apart from the mapped store files' pages,
    which count in RSS while cached but the kernel can drop at will."""
    text = _read(PROC / str(pid) / "status")
    if text is None:
        return None
    anon, file = parse_status_kib(text, "RssAnon"), parse_status_kib(text, "RssFile")
    if anon is None or file is None:
        return None
    return anon / 1024.0, file / 1024.0


def rss_mib(pid: int) -> float | None:
    text = _read(PROC / str(pid) / "status")
    if text is None:
        return None
    kib = parse_status_rss_kib(text)
    return None if kib is None else kib / 1024.0


@dataclass(slots=True)
class CpuSnapshot:
    seconds: float | None
    waits: dict[int, float] | None = None  # pid -> run-queue wait seconds so far


class ProcessCpu:
    """CPU seconds used by a set of processes (and, optionally, their descendants) between snapshots.

    Descendants matter for servers started through a wrapper (a shell, `python -m orbitmq serve`
    spawning helpers); they are resolved at construction time.
    """

    def __init__(
        self, pids: Iterable[int], *, include_descendants: bool = True, all_threads: bool = False
    ) -> None:
        roots = list(pids)
        extra = [d for p in roots for d in descendants(p)] if include_descendants else []
        self.pids = sorted(set(roots + extra))
        # all_threads: count the run-queue wait of every thread (JVMs), not just the main thread's.
        self.wait_reader = thread_wait_seconds if all_threads else run_queue_wait_seconds

    def snapshot(self) -> CpuSnapshot:
        if not self.pids:
            return CpuSnapshot(None)
        readings = [cpu_seconds(pid) for pid in self.pids]
        known = [r for r in readings if r is not None]
        waits = {pid: w for pid in self.pids if (w := self.wait_reader(pid)) is not None}
        return CpuSnapshot(sum(known) if known else None, waits)

    @staticmethod
    def max_wait_fraction(before: CpuSnapshot, after: CpuSnapshot, wall_seconds: float) -> float | None:
        """The largest share of the window any one process waited in the run queue (None: unknown)."""
        if not before.waits or not after.waits or wall_seconds <= 0:
            return None
        shares = [
            max(0.0, after.waits[pid] - start) / wall_seconds
            for pid, start in before.waits.items()
            if pid in after.waits
        ]
        return max(shares) if shares else None

    @staticmethod
    def delta_cores(before: CpuSnapshot, after: CpuSnapshot, wall_seconds: float) -> float | None:
        if before.seconds is None or after.seconds is None:
            return None
        return cores_used(max(0.0, after.seconds - before.seconds), wall_seconds)
