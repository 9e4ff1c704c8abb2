"""The server-side workloads, orbitmq only and only with `--serve` (the bench must own the broker):
W8 recovery time after SIGKILL, W9 topic scaling (topic_scaling.py), W10 cold start and idle RSS.

They drive the broker with the raw-protocol driver so that no client library start-up or rebalance
time is counted as the server's.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from orbitmq.bench import workloads as wl
from orbitmq.bench.cpu import cpu_seconds, rss_mib, run_queue_wait_seconds
from orbitmq.bench.driver import ServerHandle, make_body
from orbitmq.bench.orbitmq_server import start_orbitmq
from orbitmq.bench.progress import Progress
from orbitmq.bench.raw_driver import RawDriver
from orbitmq.bench.result import Measurement
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.client import RemotingClient

SYSTEM = "orbitmq"


async def wait_until_serving(namesrv: str, timeout: float, topic: str = "TBW102") -> float:
    """Seconds until a route query for `topic` succeeds (the broker registered and serves)."""
    start = time.perf_counter()
    client = RemotingClient(connect_timeout=1.0, name="bench-probe")
    try:
        while True:
            try:
                request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
                response = await client.invoke(namesrv, request, 1.0)
                if response.code == ResponseCode.SUCCESS:
                    return time.perf_counter() - start
            except Exception:
                client.close_connection(namesrv)
            if time.perf_counter() - start > timeout:
                raise TimeoutError(f"no route for {topic} after {timeout:.0f} s")
            await asyncio.sleep(0.005)
    finally:
        await client.close()


def server_pid(server: ServerHandle) -> int | None:
    return server.pids[0] if server.pids else None


async def cold_start(workdir: Path, progress: Progress, runs: int = 3) -> list[Measurement]:
    """W10: time from spawning `orbitmq serve` until a route query succeeds; RSS when idle."""
    progress.begin("W10 cold start", 60.0 * runs)
    times: list[float] = []
    rss: list[float] = []
    cpu: list[float] = []  # CPU seconds the serve process used until it served: barely moved by load
    waits: list[float] = []  # seconds it sat runnable in the run queue meanwhile (a busy box's share)
    for i in range(runs):
        t0 = time.perf_counter()
        # start_orbitmq returns once the listening lines are printed; the probe then waits for a route.
        server = await asyncio.to_thread(start_orbitmq, workdir / f"run{i}", None)
        try:
            listening = time.perf_counter() - t0
            await wait_until_serving(server.address, 60.0)
            times.append(time.perf_counter() - t0)
            pid = server_pid(server)
            used = cpu_seconds(pid) if pid is not None else None
            waited = run_queue_wait_seconds(pid) if pid is not None else None
            if used is not None and waited is not None:
                cpu.append(used)
                waits.append(waited)
            progress.count = i + 1
            await asyncio.sleep(2.0)  # idle: let start-up garbage settle before reading RSS
            pid = server_pid(server)
            value = rss_mib(pid) if pid is not None else None
            if value is not None:
                rss.append(value)
        finally:
            await asyncio.to_thread(server.stop)
    m = Measurement("W10", f"median of {runs}", SYSTEM)
    times.sort()
    m.extra["seconds_to_serve"] = times[len(times) // 2]
    m.extra["seconds_to_listen_last"] = listening
    if rss:
        m.extra["idle_rss_mib"] = sorted(rss)[len(rss) // 2]
    m.note = (
        f"serving after {m.extra['seconds_to_serve']:.2f} s (all: {', '.join(f'{t:.2f}' for t in times)})"
    )
    if rss:
        m.note += f"; idle RSS {m.extra['idle_rss_mib']:.0f} MiB"
    if cpu:
        m.extra["cpu_seconds_to_serve"] = sorted(cpu)[len(cpu) // 2]
        m.extra["run_queue_wait_seconds_to_serve"] = sorted(waits)[len(waits) // 2]
        m.note += (
            f"; serve process CPU until serving {m.extra['cpu_seconds_to_serve']:.2f} s, "
            f"run-queue wait {m.extra['run_queue_wait_seconds_to_serve']:.2f} s (medians)"
        )
    return [m]


async def recovery(workdir: Path, args: argparse.Namespace, progress: Progress) -> list[Measurement]:
    """W8: fill `log_mb` MiB of commit log, SIGKILL the broker, time the restart until it serves."""
    target = args.log_mb * 1024 * 1024
    size = max(args.size, 64)
    server = await asyncio.to_thread(start_orbitmq, workdir, None)
    progress.begin(f"W8 recovery: writing {args.log_mb} MiB", 600.0)
    driver = RawDriver(server.address, server)
    written = 0
    try:
        await driver.open()
        topic = wl.new_topic("W8")
        await driver.create_topic(topic, args.queues)
        batch = [make_body(size)] * max(1, min(256, (1024 * 1024) // size))
        deadline = time.monotonic() + 600
        # Each stored record is the body plus ~120-200 bytes of header and properties.
        while written < target and time.monotonic() < deadline:
            await asyncio.gather(*(driver.send_batch(topic, batch) for _ in range(4)))
            written += 4 * len(batch) * (size + 160)
            progress.count = written // (size + 160)
            progress.tick()
        await driver.close()
    finally:
        await asyncio.to_thread(server.kill)
    progress.set_phase("restarting after SIGKILL")
    t0 = time.perf_counter()
    restarted = await asyncio.to_thread(start_orbitmq, workdir, None, 600.0)
    try:
        await wait_until_serving(restarted.address, 600.0)
        seconds = time.perf_counter() - t0
    finally:
        await asyncio.to_thread(restarted.stop)
    gib = written / 1024**3
    m = Measurement("W8", f"{written / 1024**2:,.0f} MiB log", SYSTEM)
    m.extra["seconds_to_serve"] = seconds
    m.extra["seconds_per_gib"] = seconds / gib if gib > 0 else float("nan")
    m.note = f"serving {seconds:.2f} s after restart ({m.extra['seconds_per_gib']:.1f} s/GiB)"
    return [m]


async def run(
    workload: str, args: argparse.Namespace, workdir: Path, progress: Progress
) -> list[Measurement]:
    workdir.mkdir(parents=True, exist_ok=True)
    if workload == "W10":
        return await cold_start(workdir, progress)
    if workload == "W8":
        return await recovery(workdir, args, progress)
    if workload == "W9":
        from orbitmq.bench.topic_scaling import topic_scaling

        return await topic_scaling(workdir, args, progress)
    raise ValueError(f"not a server workload: {workload}")
