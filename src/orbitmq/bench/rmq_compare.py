"""orbitmq's broker against an installed Apache RocketMQ 4.9.x, with the same clients, in one run.

Both brokers run side by side (same flush mode) and the cases interleave, so the rest of a shared box
weighs on both alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Protocol

from orbitmq.bench import workloads as wl
from orbitmq.bench.apache_rmq import RocketMQInstall, start_apache
from orbitmq.bench.driver import Driver, ServerHandle
from orbitmq.bench.java_producer import run_producer
from orbitmq.bench.orbitmq_server import start_orbitmq
from orbitmq.bench.progress import Progress
from orbitmq.bench.raw_driver import RawDriver
from orbitmq.bench.result import Measurement
from orbitmq.bench.server_workloads import wait_until_serving

ORBITMQ, ORBITMQ_JAVA, APACHE_JAVA, APACHE_ORBITMQ = (
    "orbitmq",
    "orbitmq+java",
    "apache+java",
    "apache+orbitmq",
)
W1_JAVA_THREADS = 4
JAVA_WARM_UP_S = 20.0  # two of the Producer's 10 s prints


class Settings(Protocol):
    senders: list[int] | None
    repeat: int


def plan(workload: str, senders: Sequence[int] | None) -> tuple[str, list[tuple[str, int, list[str]]]]:
    """(flush mode, [(case label, threads, systems in run order)]) for W1 or W5."""
    if workload == "W5":
        cases = [
            (f"{n} senders", n, [ORBITMQ, ORBITMQ_JAVA, APACHE_JAVA, APACHE_ORBITMQ])
            for n in senders or [4, 32]
        ]
        return "SYNC_FLUSH", cases
    if workload == "W1":
        return "ASYNC_FLUSH", [
            (f"{W1_JAVA_THREADS} senders java", W1_JAVA_THREADS, [ORBITMQ_JAVA, APACHE_JAVA])
        ]
    raise ValueError(f"no Apache RocketMQ comparison for {workload}")


def ratio_of(a: Measurement | None, b: Measurement | None) -> float | None:
    if a is None or b is None or a.skipped or b.skipped:
        return None
    x, y = a.msgs_per_s, b.msgs_per_s
    return x / y if x > 0 and y > 0 else None


def annotate(rows: dict[str, Measurement]) -> list[str]:
    """Attach the two ratios the targets are stated in; return them as lines to print."""
    said: list[str] = []
    broker = ratio_of(rows.get(ORBITMQ_JAVA), rows.get(APACHE_JAVA))
    if broker is not None:
        m = rows[ORBITMQ_JAVA]
        m.extra["broker_x_apache_java_client"] = broker
        m.note = f"broker ratio orbitmq/Apache with the Java Producer {broker:.2f}; " + m.note
        said.append(f"{m.workload} {m.case}: orbitmq broker / Apache broker, Java Producer: {broker:.2f}")
    client = ratio_of(rows.get(ORBITMQ), rows.get(APACHE_JAVA))
    if client is not None:
        m = rows[ORBITMQ]
        m.extra["orbitmq_client_x_apache_java"] = client
        m.note = (m.note + "; " if m.note else "") + (
            f"orbitmq client on orbitmq / Java Producer on Apache {client:.2f}"
        )
        said.append(
            f"{m.workload} {m.case}: orbitmq client on orbitmq / Java Producer on Apache: {client:.2f}"
        )
    return said


def failed_row(workload: str, case: str, system: str, exc: BaseException) -> Measurement:
    return Measurement(workload, case, system, note=f"failed: {type(exc).__name__}: {exc}", skipped=True)


class Comparison:
    """One workload's comparison: both brokers up, drivers open, cases run round by round."""

    def __init__(
        self,
        install: RocketMQInstall,
        cfg: wl.WorkloadConfig,
        workdir: Path,
        progress: Progress,
        say: Callable[[str], None],
    ) -> None:
        self.install = install
        self.cfg = cfg
        self.workdir = workdir
        self.progress = progress
        self.say = say
        self.servers: dict[str, ServerHandle] = {}
        self.admins: dict[str, RawDriver] = {}
        self.clients: dict[str, Driver] = {}

    async def start(self, flush: str, with_clients: bool) -> None:
        conf = {"flushDiskType": flush} if flush == "SYNC_FLUSH" else {}
        orb = await asyncio.to_thread(start_orbitmq, self.workdir / f"orbitmq-{flush}", conf)
        self.servers["orbitmq"] = orb
        apache = await asyncio.to_thread(start_apache, self.install, self.workdir / f"apache-{flush}", flush)
        self.servers["apache"] = apache
        await wait_until_serving(apache.address, 60.0)  # TBW102 is routable once the broker registered
        self.say(f"apache-rmq ({flush}): namesrv {apache.address}, pids {apache.pids}")
        for side, server in self.servers.items():
            admin = RawDriver(server.address, server)
            await admin.open()
            self.admins[side] = admin
        if with_clients:
            from orbitmq.bench.client_driver import ClientDriver

            for side, system in (("orbitmq", ORBITMQ), ("apache", APACHE_ORBITMQ)):
                client = ClientDriver(self.servers[side].address, self.servers[side])
                client.system = system
                client.server_all_threads = side == "apache"
                await client.open()
                self.clients[system] = client

    async def stop(self) -> None:
        for driver in [*self.clients.values(), *self.admins.values()]:
            with contextlib.suppress(Exception):
                await driver.close()
        for server in self.servers.values():
            with contextlib.suppress(Exception):
                await asyncio.to_thread(server.stop)
        self.servers.clear()

    async def java(self, workload: str, side: str, threads: int) -> Measurement:
        server = self.servers[side]
        admin = self.admins[side]
        topic = wl.new_topic(workload)
        await admin.create_topic(topic, self.cfg.queues)
        system = ORBITMQ_JAVA if side == "orbitmq" else APACHE_JAVA
        self.progress.begin(f"{workload} {threads} senders {system}", max(10.0, self.cfg.duration) + 2.0)
        try:
            return await asyncio.to_thread(
                run_producer,
                self.install,
                namesrv=server.address,
                topic=topic,
                threads=threads,
                size=self.cfg.body_size,
                duration=self.cfg.duration,
                server_pids=server.pids,
                server_all_threads=side == "apache",
                workdir=self.workdir / "java-producer",
                workload=workload,
                system=system,
            )
        finally:
            with contextlib.suppress(Exception):
                await admin.delete_topic(topic)

    async def warm_up(self, workload: str, cases: Sequence[tuple[str, int, list[str]]]) -> None:
        """One unmeasured pass of every system at the largest sender count. A fresh JVM broker runs
        its first tens of seconds interpreted and compiling: measured here, its CPU per message fell
        from 232 to 113 to 76 µs over three 11 s runs, so without this the comparison would flatter
        orbitmq. The Java passes last two of the Producer's prints (about 21 s)."""
        threads = max(n for _, n, _ in cases)
        systems = list(dict.fromkeys(s for _, _, found in cases for s in found))
        saved = self.cfg
        try:
            for system in systems:
                java = system in (ORBITMQ_JAVA, APACHE_JAVA)
                seconds = JAVA_WARM_UP_S if java else min(saved.duration, 5.0)
                self.cfg = dataclasses.replace(saved, duration=seconds)
                self.say(f"{workload} warm-up: {system}, {threads} senders, {seconds:.0f} s (not counted)")
                with contextlib.suppress(Exception):
                    await self.case(workload, system, threads)()
        finally:
            self.cfg = saved

    def case(self, workload: str, system: str, threads: int) -> Callable[[], Awaitable[Measurement]]:
        if system in (ORBITMQ_JAVA, APACHE_JAVA):
            side = "orbitmq" if system == ORBITMQ_JAVA else "apache"
            return lambda: self.java(workload, side, threads)
        driver = self.clients[system]
        return lambda: wl.sync_send(driver, self.cfg, self.progress, threads, workload)


async def run(
    workload: str,
    install: RocketMQInstall,
    *,
    settings: Settings,
    cfg: wl.WorkloadConfig,
    workdir: Path,
    progress: Progress,
    say: Callable[[str], None],
    median: Callable[[Sequence[Measurement]], Measurement],
) -> list[Measurement]:
    """The rows of `workload` on both brokers. Systems are named broker+client:

      orbitmq          orbitmq's client on orbitmq's broker (the table's reference row)
      orbitmq+java     Apache's benchmark Producer on orbitmq's broker
      apache+java      Apache's benchmark Producer on Apache's broker
      apache+orbitmq   orbitmq's client on Apache's broker

    W5 (SYNC_FLUSH, --senders, default 4 and 32) runs all four; the table's "orbitmq ×" column then reads
    orbitmq-client-on-orbitmq / each row, and the broker ratio with the same Java client
    (orbitmq+java / apache+java) is in the orbitmq+java row's note and extra. W1 adds an ASYNC_FLUSH case
    "4 senders java" with the two Java rows only, whose ratio is that broker ratio.
    """
    flush, cases = plan(workload, settings.senders)
    comparison = Comparison(install, cfg, workdir, progress, say)
    results: list[Measurement] = []
    try:
        try:
            await comparison.start(flush, with_clients=workload == "W5")
        except Exception as exc:
            say(f"{workload} apache-rmq comparison: failed to start ({type(exc).__name__}: {exc})")
            return [failed_row(workload, label, s, exc) for label, _, systems in cases for s in systems]
        await comparison.warm_up(workload, cases)
        for label, threads, systems in cases:
            runs: dict[str, list[Measurement]] = {s: [] for s in systems}
            for _ in range(max(1, settings.repeat)):
                for system in systems:
                    try:
                        m = await comparison.case(workload, system, threads)()
                    except Exception as exc:
                        m = failed_row(workload, label, system, exc)
                    m.case = label
                    if flush == "SYNC_FLUSH":
                        m.note = (m.note + "; " if m.note else "") + "both brokers SYNC_FLUSH"
                    say(line_of(m))
                    runs[system].append(m)
            chosen = {s: median(found) for s, found in runs.items()}
            for text in annotate(chosen):
                say(text)
            results += chosen.values()
    finally:
        await comparison.stop()
    return results


def line_of(m: Measurement) -> str:
    if m.skipped:
        return f"{m.workload} {m.case} {m.system}: skipped ({m.note[:300]})"
    wait = "-" if m.server_wait is None else f"{m.server_wait * 100:.0f}"
    cwait = "-" if m.client_wait is None else f"{m.client_wait * 100:.0f}"
    return (
        f"{m.workload} {m.case} {m.system}: {m.msgs_per_s:,.0f} msgs/s, srv µs/msg "
        f"{m.server_us_per_msg or 0:,.0f}, rq wait srv/cli {wait}/{cwait} %"
    )
