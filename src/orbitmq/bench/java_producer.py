"""Apache RocketMQ's own benchmark producer (org.apache.rocketmq.example.benchmark.Producer) as a bench
client, against either broker (Apache's or orbitmq's: it only needs a nameserver address).
"""

from __future__ import annotations

import math
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orbitmq.bench.apache_rmq import PRODUCER_MAIN, RocketMQInstall
from orbitmq.bench.cpu import ProcessCpu
from orbitmq.bench.driver import DriverUnavailable
from orbitmq.bench.result import Measurement

PRINT_PERIOD_S = 10.0
PRODUCER_HEAP = ("-Xms256m", "-Xmx256m")
HEADER = re.compile(r"^topic: \S+ threadCount: (\d+) messageSize: (\d+)")
STATS = re.compile(
    r"Send TPS: (\d+) Max RT\(ms\): (\d+) Average RT\(ms\):\s*([0-9.]+|NaN) "
    r"Send Failed: (\d+) Response Failed: (\d+)"
)


@dataclass(frozen=True, slots=True)
class ProducerStats:
    tps: int
    max_rt_ms: int
    avg_rt_ms: float
    send_failed: int  # cumulative since start, as the Producer prints them
    response_failed: int


def producer_args(namesrv: str, topic: str, threads: int, size: int) -> list[str]:
    """The Producer's command line: no keys, tags, trace or ACL. Sync sends are its default, and its
    -y (async) option only exists from 4.9.4 on, so it is left out to run every 4.9.x."""
    if threads < 1 or size < 1:
        raise ValueError("threads and size must be positive")
    return ["-n", namesrv, "-t", topic, "-w", str(threads), "-s", str(size), "-k", "false"]


def parse_stats(line: str) -> ProducerStats | None:
    """The figures of a "Send TPS" line (periodic or "[Complete]"), else None."""
    match = STATS.search(line)
    if match is None:
        return None
    tps, max_rt, avg, failed, response_failed = match.groups()
    return ProducerStats(int(tps), int(max_rt), float(avg), int(failed), int(response_failed))


def prints_needed(duration: float) -> int:
    """How many 10 s prints cover `duration` seconds (at least one)."""
    return max(1, math.ceil(duration / PRINT_PERIOD_S - 1e-9))


def summarize(stats: Sequence[ProducerStats]) -> tuple[float, float, int, int]:
    """(mean TPS, mean average RT ms, max RT ms, failures) over the counted prints."""
    if not stats:
        raise ValueError("no stats lines")
    tps = sum(s.tps for s in stats) / len(stats)
    avg = sum(s.avg_rt_ms for s in stats) / len(stats)
    failed = stats[-1].send_failed + stats[-1].response_failed
    return tps, avg, max(s.max_rt_ms for s in stats), failed


class _Lines:
    """The Producer's output lines, read by a thread so that waits can have deadlines."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.log = log
        assert proc.stdout is not None
        stdout = proc.stdout

        def reader() -> None:
            with log.open("ab") as out:
                for raw in stdout:
                    out.write(raw)
                    self.queue.put(raw.decode("utf-8", "replace"))
            self.queue.put(None)

        threading.Thread(target=reader, name="java-producer-stdout", daemon=True).start()

    def next(self, deadline: float) -> str | None:
        """The next line; None at end of output; TimeoutError past the deadline."""
        try:
            return self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10.0)


def run_producer(
    install: RocketMQInstall,
    *,
    namesrv: str,
    topic: str,
    threads: int,
    size: int,
    duration: float,
    server_pids: Sequence[int],
    server_all_threads: bool,
    workdir: Path,
    workload: str,
    system: str,
) -> Measurement:
    """Run the Producer for at least `duration` and read its figures; it is ended by PID.

    The Producer runs `-w` threads of synchronous sends forever and prints "... Send TPS: N Max RT(ms): N
    Average RT(ms): X Send Failed: N Response Failed: N" every 10 s, over its last 10 one-second snapshots
    (the first 1 s after start-up), i.e. a 9 s window. So a run lasts at least one print (about 11 s with
    JVM start-up); a longer duration waits for ceil(duration / 10) prints and averages them. The CPU
    readings (broker and producer JVM, run-queue waits summed over threads) cover the same window: from
    1 s after the Producer's first output line to its last counted print.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    label = f"{threads} sender" + ("s" if threads != 1 else "")
    m = Measurement(workload, label, system, body_size=size)
    command = install.java_command(
        PRODUCER_MAIN, PRODUCER_HEAP, workdir, producer_args(namesrv, topic, threads, size)
    )
    log = workdir / f"producer-{topic}.out"
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=install.java_env(workdir), cwd=workdir
    )
    lines = _Lines(proc, log)
    needed = prints_needed(duration)
    server_cpu = ProcessCpu(server_pids, all_threads=server_all_threads)
    client_cpu = ProcessCpu([proc.pid], include_descendants=False, all_threads=True)
    stats: list[ProducerStats] = []
    try:
        deadline = time.monotonic() + 60.0
        while True:  # the header line: the Producer parsed its options and is about to start
            line = lines.next(deadline)
            if line is None:
                raise DriverUnavailable(f"the Producer exited before starting (see {log})")
            if HEADER.match(line.strip()):
                break
        # Its snapshots start 1 s later; so does our CPU window.
        time.sleep(1.0)
        s0, c0, t0 = server_cpu.snapshot(), client_cpu.snapshot(), time.perf_counter()
        s1, c1, t1 = s0, c0, t0
        deadline = time.monotonic() + needed * PRINT_PERIOD_S + 30.0
        while len(stats) < needed:
            line = lines.next(deadline)
            if line is None:
                raise DriverUnavailable(f"the Producer exited after {len(stats)} prints (see {log})")
            found = parse_stats(line)
            if found is not None:
                s1, c1, t1 = server_cpu.snapshot(), client_cpu.snapshot(), time.perf_counter()
                stats.append(found)
    except TimeoutError:
        raise DriverUnavailable(f"no 'Send TPS' line from the Producer in time (see {log})") from None
    finally:
        _end(proc)
    tps, avg_rt, max_rt, failed = summarize(stats)
    wall = t1 - t0
    m.seconds = wall
    m.messages = round(tps * wall)
    m.errors = failed
    m.server_cores = ProcessCpu.delta_cores(s0, s1, wall)
    m.client_cores = ProcessCpu.delta_cores(c0, c1, wall)
    m.server_wait = ProcessCpu.max_wait_fraction(s0, s1, wall)
    m.client_wait = ProcessCpu.max_wait_fraction(c0, c1, wall)
    m.extra["java_avg_rt_ms"] = avg_rt
    m.extra["java_max_rt_ms"] = float(max_rt)
    m.note = (
        f"Apache benchmark Producer -w {threads}: its TPS over {len(stats)} x 9 s, avg RT {avg_rt:.2f} ms, "
        f"max {max_rt} ms; JVM run-queue waits summed over threads"
    )
    if failed:
        m.note += f"; {failed} failed sends"
    return m
