"""Running a bench: start the servers, open every driver, run each case on every system back to back."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import ModuleType

from orbitmq.bench import workloads as wl
from orbitmq.bench.apache_rmq import ENV_HOME, RocketMQInstall, configured_home, find_install
from orbitmq.bench.driver import Driver, DriverUnavailable, ServerHandle
from orbitmq.bench.orbitmq_server import start_orbitmq
from orbitmq.bench.peers import default_peers_dir, load_peer
from orbitmq.bench.progress import Progress
from orbitmq.bench.result import Measurement
from orbitmq.bench.route_probe import RouteProbe, probe_row
from orbitmq.bench.table import short_note

CLIENT_WORKLOADS = ("W1", "W2", "W3", "W4")  # the ones peers run too


def client_import_error() -> str | None:
    """None when orbitmq's client library imports, else why not (it is being written alongside)."""
    try:
        import orbitmq.bench.client_driver  # noqa: F401
    except Exception as exc:
        return f"orbitmq.client does not import: {type(exc).__name__}: {exc}"
    return None


def has_client_library() -> bool:
    return client_import_error() is None


def orbitmq_drivers(choice: str) -> list[str]:
    if choice == "auto":
        return ["client"] if has_client_library() else ["raw"]
    if choice == "both":
        return ["client", "raw"]
    return [choice]


def make_orbitmq_driver(
    kind: str, namesrv: str, server: ServerHandle | None, *, busy_poll_us: float | None = None
) -> Driver:
    if kind == "raw":
        from orbitmq.bench.raw_driver import RawDriver

        return RawDriver(namesrv, server)
    problem = client_import_error()
    if problem is not None:
        raise DriverUnavailable(problem)
    from orbitmq.bench.client_driver import ClientDriver

    driver: Driver = ClientDriver(namesrv, server, busy_poll_us=busy_poll_us)
    return driver


CaseFn = Callable[[Driver, wl.WorkloadConfig, Progress], Awaitable[Measurement]]


def client_cases(workload: str, senders: list[int] | None) -> list[tuple[str, CaseFn]]:
    """The cases of a client workload, each a function running it against one driver."""

    def sync(n: int, name: str) -> CaseFn:
        return lambda d, c, p: wl.sync_send(d, c, p, n, name)

    if workload == "W1":
        return [(f"{n} senders", sync(n, "W1")) for n in (senders or [1, 4])]
    if workload == "W2":
        return [("pipelined", wl.pipelined_send), ("batch", wl.batch_send)]
    if workload == "W3":
        return [("catch-up", wl.catch_up)]
    if workload == "W4":
        return [("latency", wl.e2e_latency)]
    if workload == "W5":
        return [(f"{n} senders", sync(n, "W5")) for n in (senders or [4, 32])]
    raise ValueError(workload)


def median_run(runs: Sequence[Measurement]) -> Measurement:
    """The run whose key figure is the median (the lower middle for an even count); a note lists all."""
    done = [m for m in runs if not m.skipped]
    if not done:
        return runs[0]
    if len(done) == 1:
        return done[0]
    ordered = sorted(done, key=lambda m: m.key_figure())
    chosen = ordered[(len(ordered) - 1) // 2]
    figures = ", ".join(f"{m.key_figure():,.0f}" for m in done)
    chosen.note = (chosen.note + "; " if chosen.note else "") + f"median of {len(done)} runs ({figures})"
    return chosen


def skipped(workload: str, system: str, why: str, case: str = "") -> Measurement:
    return Measurement(workload, case or "-", system, note=why, skipped=True)


class Bench:
    """Runs a bench: starts the servers, opens every driver, then runs each case on every system back
    to back (case-major), so that load from the rest of a shared box hits all systems alike."""

    def __init__(self, args: argparse.Namespace, workdir: Path, progress: Progress) -> None:
        self.args = args
        self.workdir = workdir
        self.progress = progress
        self.results: list[Measurement] = []
        self.servers: list[ServerHandle] = []
        self.probe_rows: dict[int, Measurement] = {}  # id(measurement) -> its route-query row
        self._rocketmq: RocketMQInstall | None = None
        self._rocketmq_why: str | None = None
        self.cfg = wl.WorkloadConfig(
            duration=args.duration,
            body_size=args.size,
            queues=args.queues,
            in_flight=args.in_flight,
            batch=args.batch,
            batch_senders=args.batch_senders,
            messages=args.messages,
            rate=args.rate,
            drain_timeout=args.drain_timeout,
        )

    def say(self, text: str) -> None:
        self.progress.end(text)

    def stop_servers(self) -> None:
        while self.servers:
            server = self.servers.pop()
            with contextlib.suppress(Exception):
                server.stop()

    async def orbitmq_drivers(
        self, conf: dict[str, str], label: str, workloads: Sequence[str]
    ) -> list[Driver]:
        """Start (with --serve) an orbitmq and open its drivers; unavailable ones become skipped rows."""
        kinds = orbitmq_drivers(self.args.driver)
        busy = self.args.busy_poll_us
        if busy is not None:  # the broker polls after each answer, the client after each request
            conf = {**conf, "serverBusyPollMicros": str(busy)}
        names = ["orbitmq" if kind == "client" else "orbitmq-raw" for kind in kinds]
        server: ServerHandle | None = None
        namesrv = self.args.namesrv or "127.0.0.1:9876"
        if self.args.serve:
            try:
                server = await asyncio.to_thread(
                    start_orbitmq, self.workdir / label, conf, brokers=self.args.serve_brokers
                )
            except Exception as exc:
                why = f"`orbitmq serve` did not start: {exc}"
                self.results += [skipped(w, name, why) for name in names for w in workloads]
                self.say(f"orbitmq: {short_note(why, 300)}")
                return []
            self.servers.append(server)
            namesrv = server.address
            self.say(f"orbitmq serve ({label}): namesrv {namesrv}, pid {server.pids}")
        drivers: list[Driver] = []
        for kind, name in zip(kinds, names, strict=True):
            try:
                driver = make_orbitmq_driver(kind, namesrv, server, busy_poll_us=busy)
                await driver.open()
            except Exception as exc:
                self.results += [skipped(w, name, str(exc)) for w in workloads]
                self.say(f"{name}: skipped ({short_note(str(exc), 300)})")
                continue
            drivers.append(driver)
        return drivers

    async def peer_driver(self, name: str, workloads: Sequence[str]) -> Driver | None:
        peers_dir = self.args.peers_dir or default_peers_dir()
        try:
            module: ModuleType = load_peer(name, peers_dir)
            server: ServerHandle = await asyncio.to_thread(module.start_server, self.workdir / name)
        except (FileNotFoundError, AttributeError, DriverUnavailable) as exc:
            self.results += [skipped(w, name, str(exc)) for w in workloads]
            self.say(f"{name}: skipped ({exc})")
            return None
        self.servers.append(server)
        self.say(f"{name}: server {server.address}, pid {server.pids}")
        driver: Driver = module.make_driver(server)
        try:
            await driver.open()
        except Exception as exc:
            self.results += [skipped(w, name, str(exc)) for w in workloads]
            self.say(f"{name}: skipped ({exc})")
            return None
        return driver

    def route_probe(self, driver: Driver, workload: str) -> RouteProbe | None:
        """W1 on orbitmq: a route-query probe of the driver's nameserver for the case's window."""
        namesrv = getattr(driver, "namesrv", None)
        if workload != "W1" or not self.args.route_probe or not isinstance(namesrv, str):
            return None
        return RouteProbe(namesrv)

    async def run_case(self, driver: Driver, workload: str, case: CaseFn, note: str = "") -> Measurement:
        probe = self.route_probe(driver, workload)
        if probe is not None and not await asyncio.to_thread(probe.start):
            self.say(f"{workload} {driver.system}: the route-query probe did not start")
            probe = None
        try:
            m = await case(driver, self.cfg, self.progress)
        except DriverUnavailable as exc:
            self.say(f"{workload} {driver.system}: skipped ({short_note(str(exc), 300)})")
            return skipped(workload, driver.system, str(exc))
        except Exception as exc:
            why = f"{type(exc).__name__}: {short_note(str(exc), 300)}"
            self.say(f"{workload} {driver.system}: failed ({why})")
            return skipped(workload, driver.system, f"failed: {why}")
        finally:
            routes = None if probe is None else await asyncio.to_thread(probe.finish)
        if routes is not None and routes.count:
            m.extra["route_query_p50_us"] = routes.p50_us
            m.extra["route_query_p99_us"] = routes.p99_us
            self.probe_rows[id(m)] = probe_row(m, routes)
        if note:
            m.note = (m.note + "; " if m.note else "") + note
        self.say(summary_line(m))
        return m

    async def run_cases(self, drivers: Sequence[Driver], workloads: Sequence[str], note: str = "") -> None:
        repeat = max(1, self.args.repeat)
        for workload in workloads:
            for _, case in client_cases(workload, self.args.senders):
                runs: dict[str, list[Measurement]] = {d.system: [] for d in drivers}
                for _ in range(repeat):
                    for driver in drivers:
                        runs[driver.system].append(await self.run_case(driver, workload, case, note))
                for m in (median_run(found) for found in runs.values()):
                    self.results.append(m)
                    route = self.probe_rows.get(id(m))
                    if route is not None:  # the route queries of the chosen run, right under it
                        self.results.append(route)
                self.probe_rows.clear()

    async def run(self, workloads: Sequence[str], peers: Sequence[str]) -> None:
        client = [w for w in workloads if w in CLIENT_WORKLOADS]
        drivers: list[Driver] = []
        try:
            if client:
                if not self.args.no_orbitmq:
                    drivers += await self.orbitmq_drivers({}, "orbitmq", client)
                for peer in peers:
                    found = await self.peer_driver(peer, client)
                    if found is not None:
                        drivers.append(found)
                await self.run_cases(drivers, client)
            for driver in drivers:
                with contextlib.suppress(Exception):
                    await driver.close()
            drivers = []
            self.stop_servers()
            if self.args.no_orbitmq:
                return
            if "W1" in workloads and self.rocketmq_install("W1") is not None:
                await self.run_rocketmq("W1")
            if "W5" in workloads:
                if self.rocketmq_install("W5") is not None:
                    await self.run_rocketmq("W5")
                else:
                    await self.run_w5()
            if "W6" in workloads:
                await self.run_w6()
            if "W7" in workloads:
                await self.run_w7()
            for workload in ("W8", "W9", "W10"):
                if workload in workloads:
                    await self.run_server_workload(workload)
        finally:
            for driver in drivers:
                with contextlib.suppress(Exception):
                    await driver.close()
            self.stop_servers()

    def rocketmq_install(self, workload: str) -> RocketMQInstall | None:
        """The Apache RocketMQ to compare with, else None and (once, for W5) a skipped row saying why."""
        if self._rocketmq is not None:
            return self._rocketmq
        why = self._rocketmq_why
        if why is None:
            home = configured_home(self.args.rocketmq_home)
            if home is None:
                why = f"no Apache RocketMQ to compare with (--rocketmq-home or {ENV_HOME})"
            elif not self.args.serve:
                why = "needs --serve (the bench must own both brokers' flush mode)"
            else:
                try:
                    self._rocketmq = find_install(home)
                    return self._rocketmq
                except DriverUnavailable as exc:
                    why = str(exc)
            self._rocketmq_why = why
            self.say(f"apache-rmq: skipped ({why})")
        if workload == "W5":
            self.results.append(skipped("W5", "apache+java", why))
        return None

    async def run_rocketmq(self, workload: str) -> None:
        from orbitmq.bench import rmq_compare

        install = self._rocketmq
        assert install is not None
        found = await rmq_compare.run(
            workload,
            install,
            settings=self.args,
            cfg=self.cfg,
            workdir=self.workdir / f"apache-{workload}",
            progress=self.progress,
            say=self.say,
            median=median_run,
        )
        self.results += found

    async def run_w5(self) -> None:
        # Against a running cluster the bench cannot choose the flush mode: it is the cluster's own.
        note = "" if self.args.serve else "flush mode is the cluster's own"
        drivers = await self.orbitmq_drivers({"flushDiskType": "SYNC_FLUSH"}, "orbitmq-w5", ["W5"])
        try:
            await self.run_cases(drivers, ["W5"], note)
        finally:
            for driver in drivers:
                with contextlib.suppress(Exception):
                    await driver.close()
            self.stop_servers()

    async def run_w6(self) -> None:
        from orbitmq.bench import replication

        try:
            found = await replication.run(self.args, self.cfg, self.workdir / "W6", self.progress)
        except Exception as exc:
            why = f"failed: {type(exc).__name__}: {short_note(str(exc), 300)}"
            found = [skipped("W6", "orbitmq-raw", why)]
        for m in found:
            self.results.append(m)
            self.say(summary_line(m))

    async def run_w7(self) -> None:
        # spark_bench.py always starts its own `orbitmq serve`: the target (--serve / -n) does not apply,
        # --serve-brokers does.
        from orbitmq.bench import spark_workload

        try:
            found = await spark_workload.run(
                self.args.spark_messages, self.args.size, self.progress, brokers=self.args.serve_brokers
            )
        except Exception as exc:
            found = [skipped("W7", spark_workload.SYSTEM, f"failed: {type(exc).__name__}: {exc}")]
        for m in found:
            self.results.append(m)
            self.say(summary_line(m))

    async def run_server_workload(self, workload: str) -> None:
        if not self.args.serve:
            self.results.append(skipped(workload, "orbitmq", "needs --serve (the bench must own the broker)"))
            return
        from orbitmq.bench import server_workloads

        try:
            found = await server_workloads.run(workload, self.args, self.workdir / workload, self.progress)
        except Exception as exc:
            found = [skipped(workload, "orbitmq", f"failed: {type(exc).__name__}: {exc}")]
        for m in found:
            self.results.append(m)
            self.say(summary_line(m))


def summary_line(m: Measurement) -> str:
    if m.skipped:
        return f"{m.workload} {m.case} {m.system}: skipped ({short_note(m.note, 300)})"
    lat = m.latency
    latency = f", p50 {lat.p50_us:,.0f} µs p99 {lat.p99_us:,.0f} µs" if lat.count else ""
    cpu = ""
    if m.server_cores is not None or m.client_cores is not None:
        srv = "-" if m.server_cores is None else f"{m.server_cores:.2f}"
        cli = "-" if m.client_cores is None else f"{m.client_cores:.2f}"
        cpu = f", cores srv {srv} cli {cli}"
    rate = f"{m.messages:,} msgs in {m.seconds:.1f} s = {m.msgs_per_s:,.0f} msgs/s" if m.seconds else m.note
    return f"{m.workload} {m.case} {m.system}: {rate}{latency}{cpu}"
