"""Route-query latency while a workload runs: does the nameserver keep answering when brokers saturate?

A separate process asks for a route on its own connection, so the figure is the nameserver's answer
time and not the bench's busy event loop; `RouteProbe` is the bench side.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import orjson

from orbitmq.bench.result import Measurement
from orbitmq.bench.stats import LatencyRecorder, LatencySummary

INTERVAL = 0.02  # 50 queries per second: a busy client fleet's route refreshes, not a load of its own
TOPIC = "TBW102"


async def probe(namesrv: str) -> dict[str, float]:
    from orbitmq.protocol.codes import RequestCode
    from orbitmq.protocol.command import RemotingCommand
    from orbitmq.transport.client import RemotingClient

    client = RemotingClient(connect_timeout=3.0, name="bench-route-probe")
    recorder = LatencyRecorder()
    errors = 0
    stop = threading.Event()
    loop = asyncio.get_running_loop()

    def ask() -> RemotingCommand:
        return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})

    try:
        await client.invoke(namesrv, ask(), 5.0)  # connect before "ready"
        print("ready", flush=True)
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if line.strip() != "go":
            return {}

        def wait_for_stop() -> None:
            sys.stdin.readline()
            stop.set()

        threading.Thread(target=wait_for_stop, daemon=True).start()
        t0 = time.perf_counter()
        while not stop.is_set():
            t = time.perf_counter_ns()
            try:
                await client.invoke(namesrv, ask(), 5.0)
                recorder.record(time.perf_counter_ns() - t)
            except Exception:
                errors += 1
            await asyncio.sleep(INTERVAL)
        seconds = time.perf_counter() - t0
    finally:
        await client.close()
    summary = recorder.summary()
    return {**summary.to_dict(), "errors": errors, "seconds": seconds}


def main(argv: list[str]) -> int:
    from orbitmq.transport.loop import run

    result = run(probe(argv[0]))
    print(orjson.dumps(result).decode(), flush=True)
    return 0


class RouteProbe:
    """The probe process, for one measured window: start() before it, finish() after.

    `python -m orbitmq.bench.route_probe NAMESRV` asks GET_ROUTEINFO_BY_TOPIC for TBW102 every `INTERVAL`
    seconds. Over stdin/stdout, one line each: it prints "ready" once connected, starts on "go", stops on
    "stop" (or end of input) and prints one JSON line of latencies (µs).
    """

    def __init__(self, namesrv: str) -> None:
        self.namesrv = namesrv
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 30.0) -> bool:
        """Start the probe and begin querying; False (and no probe) when it did not come up in time."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "orbitmq.bench.route_probe", self.namesrv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        stdout, stdin = self.proc.stdout, self.proc.stdin
        assert stdout is not None and stdin is not None
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not ready or ready[0].strip() != "ready":
            self.kill()
            return False
        stdin.write("go\n")
        stdin.flush()
        return True

    def finish(self, timeout: float = 15.0) -> LatencySummary | None:
        """Stop querying; the latencies, or None when the probe failed."""
        proc = self.proc
        if proc is None:
            return None
        try:
            out, _ = proc.communicate("stop\n", timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        finally:
            self.proc = None
        try:
            d = orjson.loads(out.strip().splitlines()[-1])
            return LatencySummary(
                int(d["count"]),
                float(d["mean_us"]),
                float(d["p50_us"]),
                float(d["p99_us"]),
                float(d["max_us"]),
            )
        except (IndexError, KeyError, TypeError, ValueError, orjson.JSONDecodeError):
            return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def probe_row(m: Measurement, summary: LatencySummary) -> Measurement:
    """The table row for the route queries made during `m`'s window (msgs/s = queries per second)."""
    row = Measurement(m.workload, f"{m.case}: route query", m.system)
    row.messages = summary.count
    row.seconds = m.seconds
    row.latency = summary
    row.note = "GET_ROUTEINFO_BY_TOPIC from a separate process every 20 ms while the senders ran"
    return row


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
