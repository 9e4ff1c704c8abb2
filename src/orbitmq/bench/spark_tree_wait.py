"""Run-queue wait and CPU of the bench's process tree (the box is shared: waiting is not working)."""

from __future__ import annotations

import os

from orbitmq.bench.cpu import cpu_seconds, descendants


class TreeWait:
    """Run-queue wait (s) and CPU (s) of this process and its descendants between `start()` and
    `note(wall)`; a process's threads are all counted (schedstat of the whole process is the sum of
    its threads). The CPU is split into the broker's and the rest (the JVM, its Python workers, this
    driver): per row, it says which side a write is bound by on a box whose cores they share."""

    def __init__(self, broker_pid: int | None = None) -> None:
        self.broker_pid = broker_pid
        # The broker side: the broker's process and its children (`orbitmq serve --brokers N`), as of
        # the last start().
        self.broker_pids: set[int] = set()
        self.before: dict[int, tuple[float, float]] = {}
        self.last = (0.0, 0.0)  # the last note's CPU per row (us): Spark side, broker
        self.broker_occupied = 0.0  # share of the last phase the broker ran or waited for a CPU

    def _sample(self) -> dict[int, tuple[float, float]]:
        pids = [os.getpid(), *descendants(os.getpid())]
        return {pid: (_process_wait(pid), cpu_seconds(pid) or 0.0) for pid in pids}

    def start(self) -> None:
        pid = self.broker_pid
        self.broker_pids = set() if pid is None else {pid, *descendants(pid)}
        self.before = self._sample()

    def note(self, wall: float, rows: int = 0) -> str:
        after = self._sample()
        zero = (0.0, 0.0)
        waits = {pid: w - self.before.get(pid, zero)[0] for pid, (w, _) in after.items()}
        cpu = {pid: c - self.before.get(pid, zero)[1] for pid, (_, c) in after.items()}
        total = sum(waits.values())
        broker = sum(waits.get(pid, 0.0) for pid in self.broker_pids)
        said = f"runq wait {total / wall:.2f} s/s (broker {broker / wall:.2f})"
        broker_cpu = sum(cpu.get(pid, 0.0) for pid in self.broker_pids)
        spark_cpu = sum(cpu.values()) - broker_cpu
        self.broker_occupied = (broker + broker_cpu) / wall
        if rows:
            self.last = (spark_cpu / rows * 1e6, broker_cpu / rows * 1e6)
            said += (
                f"; cpu/row spark {spark_cpu / rows * 1e6:.1f} us, broker {broker_cpu / rows * 1e6:.1f} us"
                f"; cores spark {spark_cpu / wall:.2f}, broker {broker_cpu / wall:.2f}"
            )
        return said


def _process_wait(pid: int) -> float:
    """Sum over the process's threads (/proc/PID/schedstat is the main thread only)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    total = 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return total
