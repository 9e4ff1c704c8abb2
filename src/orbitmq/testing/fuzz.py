"""Fuzz a real `orbitmq serve` with hostile clients while a healthy producer/consumer pair runs.

    python -m orbitmq.testing.fuzz --seconds 60 --max-frames 200000 --workers 3 --seed 7

Loopback only, bounded in count and time; exit status 0 when every check of `run_fuzz` passes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.fuzz_cases import MARKER, CaseMaker
from orbitmq.testing.launch import start_serve
from orbitmq.testing.process import ServerProcess

HEALTHY_TOPIC = "FuzzHealthyTopic"
HEALTHY_PRODUCER = "FuzzHealthyProducer"
HEALTHY_CONSUMER = "FuzzHealthyConsumer"


@dataclass(frozen=True)
class FuzzPlan:
    seconds: float
    max_frames: int
    workers: int = 3
    seed: int = 1
    baseline_seconds: float = 2.0
    admin: bool = True  # include the requests that rewrite config files (topic/group create/delete)


@dataclass
class FuzzReport:
    seconds: float = 0.0
    frames_sent: int = 0
    cases: dict[str, int] = field(default_factory=dict)
    healthy_sent: int = 0
    healthy_send_errors: int = 0
    healthy_consumed: int = 0
    lost: int = 0
    route_queries: int = 0
    route_errors: int = 0
    route_p50_ms: float = 0.0
    route_p99_ms: float = 0.0
    route_max_ms: float = 0.0
    send_p50_ms: float = 0.0
    send_p99_ms: float = 0.0
    send_max_ms: float = 0.0
    # The same healthy pair alone, just before the hostile clients start (the peer in the same run).
    baseline_route_p99_ms: float = 0.0
    baseline_send_p99_ms: float = 0.0
    rss_start_kb: int = 0
    rss_max_kb: int = 0
    rss_end_kb: int = 0
    rss_anon_max_kb: int = 0
    rss_anon_end_kb: int = 0
    server_alive: bool = True
    # Turns in which one connection held the server's loop > 100 ms (its log says which codes).
    server_slow_turns: int = 0
    escaped: list[str] = field(default_factory=list)
    p99_limit_ms: float = 50.0

    def problems(self) -> list[str]:
        out: list[str] = []
        if not self.server_alive:
            out.append("the server process died")
        if self.escaped:
            out.append(f"files outside the store: {self.escaped[:5]}")
        if self.lost:
            out.append(f"{self.lost} acknowledged messages were not consumed")
        if self.healthy_send_errors or self.route_errors:
            out.append(
                f"healthy requests failed: {self.healthy_send_errors} sends, {self.route_errors} routes"
            )
        if self.route_p99_ms >= self.p99_limit_ms:
            out.append(f"route p99 {self.route_p99_ms:.1f} ms >= {self.p99_limit_ms} ms")
        if self.send_p99_ms >= self.p99_limit_ms:
            out.append(f"send p99 {self.send_p99_ms:.1f} ms >= {self.p99_limit_ms} ms")
        if not self.healthy_sent:
            out.append("the healthy producer sent nothing")
        return out


def percentile(samples: list[float], q: float) -> float:
    if not samples:
        return 0.0
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """Resident memory of `pid` in KiB (VmRSS; RssAnon leaves out the mapped store files)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


# ---------------------------------------------------------------------------------- hostile side
def _split(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        raise ValueError(f"the fuzz driver targets the loopback only, not {addr}")
    return host, int(port)


async def _hostile(addrs: dict[str, str], plan: FuzzPlan) -> tuple[int, dict[str, int]]:
    deadline = time.monotonic() + plan.seconds
    sent = 0
    cases: dict[str, int] = {}

    async def worker(index: int) -> None:
        nonlocal sent
        maker = CaseMaker(plan.seed * 1000 + index, admin=plan.admin)
        while time.monotonic() < deadline and sent < plan.max_frames:
            kind, target, frames = maker.next()
            host, port = _split(addrs[target])
            try:
                reader, writer = await asyncio.open_connection(host, port)
            except OSError:
                await asyncio.sleep(0.01)
                continue
            try:
                for frame in frames:
                    writer.write(frame)
                    await writer.drain()
                    sent += 1
                if maker.rng.random() < 0.3:  # sometimes read what comes back before leaving
                    with contextlib.suppress(TimeoutError, OSError):
                        await asyncio.wait_for(reader.read(65536), 0.05)
            except OSError:
                pass  # the server closed a broken stream: expected
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
            cases[kind] = cases.get(kind, 0) + 1

    await asyncio.gather(*(worker(i) for i in range(plan.workers)))
    return sent, cases


def _hostile_process(addrs: dict[str, str], plan: FuzzPlan, out: Any) -> None:
    sent, cases = asyncio.run(_hostile(addrs, plan))
    out.put((sent, cases))


# ---------------------------------------------------------------------------------- healthy side
async def _invoke(client: Any, addr: str, code: int, ext: dict[str, str]) -> RemotingCommand:
    response: RemotingCommand = await client.invoke(addr, RemotingCommand.request(code, ext), 5)
    return response


async def _prepare_topic(client: Any, serve: ServerProcess) -> None:
    create = {
        "topic": HEALTHY_TOPIC,
        "defaultTopic": "TBW102",
        "readQueueNums": "2",
        "writeQueueNums": "2",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
    }
    created = await _invoke(client, serve.broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, create)
    if created.code != ResponseCode.SUCCESS:
        raise RuntimeError(f"creating {HEALTHY_TOPIC} failed: {created.remark}")
    for _ in range(100):
        route = await _invoke(
            client, serve.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": HEALTHY_TOPIC}
        )
        if route.code == ResponseCode.SUCCESS:
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no route for {HEALTHY_TOPIC}")


async def _healthy(
    serve: ServerProcess, report: FuzzReport, stop: asyncio.Event, hostile_on: asyncio.Event
) -> None:
    from orbitmq.client.aio import ConsumeFromWhere, LitePullConsumer, Message, Producer
    from orbitmq.transport import RemotingClient

    client = RemotingClient()
    acked: set[bytes] = set()
    consumed: set[bytes] = set()
    route_ms: list[float] = []
    send_ms: list[float] = []
    base_route_ms: list[float] = []
    base_send_ms: list[float] = []
    try:
        await _prepare_topic(client, serve)
        producer = Producer(HEALTHY_PRODUCER, serve.namesrv_addr, send_timeout=5.0)
        consumer = LitePullConsumer(
            HEALTHY_CONSUMER,
            serve.namesrv_addr,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            poll_timeout=0.5,
        )
        consumer.subscribe(HEALTHY_TOPIC)
        await producer.start()
        await consumer.start()

        async def probe_routes() -> None:
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    got = await _invoke(
                        client,
                        serve.namesrv_addr,
                        RequestCode.GET_ROUTEINFO_BY_TOPIC,
                        {"topic": HEALTHY_TOPIC},
                    )
                    ok = got.code == ResponseCode.SUCCESS
                except Exception:
                    ok = False
                (route_ms if hostile_on.is_set() else base_route_ms).append(
                    (time.perf_counter() - started) * 1000
                )
                report.route_queries += 1
                report.route_errors += not ok
                await asyncio.sleep(0.01)

        async def produce() -> None:
            n = 0
            while not stop.is_set():
                body = b"healthy-%d" % n
                n += 1
                started = time.perf_counter()
                try:
                    await producer.send(Message.create(HEALTHY_TOPIC, body))
                except Exception:
                    report.healthy_send_errors += 1
                else:
                    acked.add(body)
                (send_ms if hostile_on.is_set() else base_send_ms).append(
                    (time.perf_counter() - started) * 1000
                )
                await asyncio.sleep(0.005)

        async def consume() -> None:
            while not stop.is_set() or not acked <= consumed:
                for msg in await consumer.poll(0.5):
                    consumed.add(bytes(msg.body))
                if stop.is_set() and not acked <= consumed and time.monotonic() > drain_deadline:
                    return

        drain_deadline = float("inf")
        consumer_task = asyncio.ensure_future(consume())
        await asyncio.gather(probe_routes(), produce())
        drain_deadline = time.monotonic() + 20.0
        await consumer_task
        await producer.shutdown()
        await consumer.shutdown()
    finally:
        await client.close()
    report.healthy_sent = len(acked)
    report.healthy_consumed = len(acked & consumed)
    report.lost = len(acked - consumed)
    report.route_p50_ms, report.route_p99_ms = percentile(route_ms, 0.5), percentile(route_ms, 0.99)
    report.route_max_ms = max(route_ms, default=0.0)
    report.send_p50_ms, report.send_p99_ms = percentile(send_ms, 0.5), percentile(send_ms, 0.99)
    report.send_max_ms = max(send_ms, default=0.0)
    report.baseline_route_p99_ms = percentile(base_route_ms, 0.99)
    report.baseline_send_p99_ms = percentile(base_send_ms, 0.99)


def escaped_files(workdir: Path) -> list[str]:
    """Paths carrying the fuzz marker outside the store: anywhere in the work directory, at the top of its
    parent, of /tmp and of /."""
    store = workdir / "store"
    found: list[str] = []
    for root, dirs, files in os.walk(workdir):
        dirs[:] = [d for d in dirs if Path(root, d) != store]
        found += [os.path.join(root, n) for n in dirs + files if MARKER in n]
    for top in (workdir.parent, Path("/tmp"), Path("/")):
        with contextlib.suppress(OSError):
            found += [str(p) for p in top.iterdir() if MARKER in p.name]
    return sorted(set(found))


async def _run(serve: ServerProcess, workdir: Path, plan: FuzzPlan) -> FuzzReport:
    seconds = plan.seconds
    report = FuzzReport()
    report.rss_start_kb = report.rss_max_kb = rss_kb(serve.pid)
    addrs = {"broker": serve.broker_addr, "namesrv": serve.namesrv_addr}
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    hostile = ctx.Process(target=_hostile_process, args=(addrs, plan, results), daemon=True)
    stop = asyncio.Event()
    hostile_on = asyncio.Event()
    started = time.monotonic()
    healthy = asyncio.ensure_future(_healthy(serve, report, stop, hostile_on))
    await asyncio.sleep(plan.baseline_seconds)  # the healthy pair alone first: the baseline
    hostile_on.set()
    hostile.start()
    try:
        while hostile.is_alive() and time.monotonic() - started < seconds + 30:
            report.rss_max_kb = max(report.rss_max_kb, rss_kb(serve.pid))
            report.rss_anon_max_kb = max(report.rss_anon_max_kb, rss_kb(serve.pid, "RssAnon"))
            await asyncio.sleep(0.5)
            if healthy.done():
                break
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            report.frames_sent, report.cases = results.get(timeout=10)
        hostile.join(10)
        if hostile.is_alive():
            hostile.kill()
    await healthy
    report.seconds = round(time.monotonic() - started, 1)
    report.rss_end_kb = rss_kb(serve.pid)
    report.rss_anon_end_kb = rss_kb(serve.pid, "RssAnon")
    report.server_alive = serve.is_running()
    with contextlib.suppress(OSError):
        log_text = Path(serve.stderr_path).read_text(encoding="utf-8", errors="replace")
        report.server_slow_turns = log_text.count("held the loop")
    report.escaped = escaped_files(workdir)
    return report


def run_fuzz(
    *,
    seconds: float,
    max_frames: int,
    workers: int = 3,
    seed: int = 1,
    baseline_seconds: float = 2.0,
    admin: bool = True,
    workdir: Path | None = None,
) -> FuzzReport:
    """Start `orbitmq serve`, fuzz it, stop it; the report (see `FuzzReport.problems`).

    For at most `seconds` and `max_frames` frames: hostile workers (a separate process, so their CPU does
    not distort the healthy client's timings) send `fuzz_cases.CaseMaker`'s cases on fresh connections;
    a healthy Producer sends numbered messages that a LitePullConsumer consumes; a prober asks the
    nameserver for the healthy topic's route every 10 ms. Then it checks: the server is alive, nothing
    named with the fuzz marker exists outside the store, every acknowledged message was consumed, and the
    p99 of the route queries and of the sends is under the limit (50 ms); RSS is sampled throughout.
    """
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="orbitmq-fuzz-")))
        workdir = workdir / "fuzz"
        workdir.mkdir(parents=True, exist_ok=True)
        serve = stack.enter_context(start_serve(workdir))
        return asyncio.run(
            _run(serve, workdir, FuzzPlan(seconds, max_frames, workers, seed, baseline_seconds, admin))
        )
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m orbitmq.testing.fuzz", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--max-frames", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline-seconds", type=float, default=2.0, help="healthy pair alone first")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument(
        "--no-admin", action="store_true", help="leave out topic/group create and delete (config rewrites)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    report = run_fuzz(
        seconds=args.seconds,
        max_frames=args.max_frames,
        workers=args.workers,
        seed=args.seed,
        baseline_seconds=args.baseline_seconds,
        admin=not args.no_admin,
        workdir=args.workdir,
    )
    text = orjson.dumps(asdict(report), option=orjson.OPT_INDENT_2).decode()
    print(text)
    if args.json:
        args.json.write_text(text)
    problems = report.problems()
    for problem in problems:
        print("PROBLEM:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
