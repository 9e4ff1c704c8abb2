"""`python -m orbitmq.testing.churn --seconds N --seed S`: a broker under client churn, watched for leaks.

A namesrv and a broker (real processes, 127.0.0.1) serve 100 consumer groups on 20 topics whose members
join and leave every few seconds, short-lived producers, held long polls and a consumer that never
acknowledges (churn_load.py). The broker's RSS, open files, threads and asyncio tasks are sampled and
fitted after warm-up (churn_sample.py). Exit status 1 when something grows, an ERROR line is in a server's
log, or a group did not consume every acknowledged message of its topic; 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import urllib.error
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orbitmq.testing.churn_load import Load, Shape
from orbitmq.testing.churn_sample import Trend, Watch
from orbitmq.testing.launch import start_broker, start_namesrv
from orbitmq.testing.metrics import listening_url, scrape, value
from orbitmq.testing.process import ServerProcess

log = logging.getLogger("orbitmq.churn")

# The servers log "DATE TIME LEVEL NAME: MESSAGE"; a traceback printed by anything else counts too.
ERROR_LINE = re.compile(r"^\S+ \S+ (ERROR|CRITICAL) |^Traceback \(most recent call last\)")
MAX_SECONDS = 24 * 3600


@dataclass
class Options:
    seconds: float
    seed: int = 1
    warmup: float | None = None  # default: a third of the run, at most 10 minutes
    sample_interval: float = 5.0
    step: float = 3.0  # seconds between churn steps
    drain_timeout: float = 120.0
    shape: Shape = field(default_factory=Shape)

    def __post_init__(self) -> None:
        if not 10 <= self.seconds <= MAX_SECONDS:
            raise ValueError(f"seconds must be between 10 and {MAX_SECONDS}, not {self.seconds}")
        if self.warmup is None:
            self.warmup = min(self.seconds / 3, 600.0)
        if not 0 <= self.warmup < self.seconds:
            raise ValueError(f"warmup must be at least 0 and under seconds, not {self.warmup}")
        for name in ("sample_interval", "step", "drain_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be above 0, not {getattr(self, name)}")


@dataclass
class Report:
    options: dict[str, Any]
    elapsed: float
    samples: int
    trends: list[Trend]
    sent: int
    consumed: int
    owed: dict[str, int]
    counts: dict[str, Any]
    log_errors: list[str]
    held_pulls_max: float
    connections_max: float
    broker_exit: int | None
    failures: list[str]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["trends"] = {t.name: {**asdict(t), "ok": t.ok} for t in self.trends}
        return out

    def describe(self) -> str:
        c = self.counts
        lines = [
            f"churn: {self.elapsed:.0f} s, {self.samples} samples, warm-up {self.options['warmup']:.0f} s, "
            f"seed {self.options['seed']}",
            f"sent (acknowledged) {self.sent}, send failures {c['send_failures']}, consumed by the groups "
            f"{self.consumed} (distinct per group), owed {sum(self.owed.values())} "
            f"in {len(self.owed)} groups",
            f"consumer joins {c['consumer_joins']}, leaves {c['consumer_leaves']}, producers "
            f"{c['producer_starts']}; held by the slow consumer {c['slow_held']}; held pulls up to "
            f"{self.held_pulls_max:.0f}, connections up to {self.connections_max:.0f}",
            *(t.describe() for t in self.trends),
            f"ERROR lines in the server logs: {len(self.log_errors)}",
            *(f"  {line}" for line in self.log_errors[:10]),
            f"client errors: {len(c['client_errors'])}",
            *(f"  {line}" for line in c["client_errors"][:10]),
            "result: " + ("ok" if not self.failures else "FAILED: " + "; ".join(self.failures)),
        ]
        return "\n".join(lines)


def error_lines(*paths: Path) -> list[str]:
    found: list[str] = []
    for path in paths:
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if ERROR_LINE.search(line):
                    found.append(f"{path.name}: {line}")
    return found


async def _sampler(
    watch: Watch, url: str, interval: float, stop: asyncio.Event, peaks: dict[str, float]
) -> None:
    while not stop.is_set():
        extra: dict[str, float] = {}
        try:
            scraped = await asyncio.to_thread(scrape, url)
        except (OSError, urllib.error.URLError) as exc:
            log.warning("metrics scrape failed: %s", exc)
        else:
            extra["tasks"] = value(scraped, "orbitmq_asyncio_tasks")
            extra["connections"] = value(scraped, "orbitmq_connections")
            for name in ("held_pulls", "connections"):
                peaks[name] = max(peaks.get(name, 0.0), value(scraped, f"orbitmq_{name}"))
        try:
            watch.add(extra)
        except OSError as exc:  # the broker died: the run reports it
            log.warning("sampling the broker failed: %s", exc)
            return
        try:
            await asyncio.wait_for(stop.wait(), interval)
        except TimeoutError:
            pass


async def _churn(load: Load, options: Options, until: float) -> None:
    """Every `step` seconds one to three swaps (a consumer joins one group while another leaves a
    different group: the number of consumers stays put, so what the broker holds per client is level
    unless it leaks), and now and then a new producer."""
    loop = asyncio.get_running_loop()
    shape = options.shape
    rng = load.rng
    groups = [shape.group(i) for i in range(shape.groups)]
    while loop.time() < until:
        actions = []
        for _ in range(rng.randint(1, 3)):
            open_groups = [g for g in groups if len(load.members[g]) < shape.max_members]
            if not open_groups:
                break
            joining = rng.choice(open_groups)
            leaving = [g for g in groups if g != joining and load.members[g]]
            actions.append(load.join(joining))
            if leaving:
                actions.append(load.leave(rng.choice(leaving)))
        if load.producers < shape.max_producers and (load.producers == 0 or rng.random() < 0.5):
            load.start_producer(until)
        # A client that fails in an unexpected way is reported, not the end of the run.
        for outcome in await asyncio.gather(*actions, return_exceptions=True):
            if isinstance(outcome, BaseException):
                load.counts.client_errors.append(f"churn step: {type(outcome).__name__}: {outcome}")
        await asyncio.sleep(options.step)


async def _drain(load: Load, timeout: float) -> None:
    """Every group gets a member again; wait until none owes a message (or `timeout`)."""
    await asyncio.gather(*(load.join(g) for g, members in load.members.items() if not members))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while load.owed() and loop.time() < deadline:
        await asyncio.sleep(1.0)


async def run(options: Options, workdir: Path) -> Report:
    rng = random.Random(options.seed)
    started = time.monotonic()
    with start_namesrv(workdir) as ns:
        broker = start_broker(workdir, ns.address, metricsPort=0, mappedFileSizeCommitLog=8 * 1024 * 1024)
        try:
            return await _run_with(options, rng, ns, broker, started)
        finally:
            broker.stop()


async def _run_with(
    options: Options, rng: random.Random, ns: ServerProcess, broker: ServerProcess, started: float
) -> Report:
    assert options.warmup is not None
    load = Load(ns.address, broker.broker_addr, options.shape, rng)
    url = listening_url(broker)
    watch = Watch(broker.pid)
    stop = asyncio.Event()
    peaks: dict[str, float] = {}
    loop = asyncio.get_running_loop()
    try:
        await load.create_topics()
        await load.start_slow()
        # Every group starts with one member (the churn then changes that), then the churn runs.
        await asyncio.gather(*(load.join(options.shape.group(i)) for i in range(options.shape.groups)))
        watch.started = time.monotonic()
        sampler = loop.create_task(_sampler(watch, url, options.sample_interval, stop, peaks))
        await _churn(load, options, loop.time() + options.seconds)
        stop.set()
        await sampler
        await load.stop_producers()
        await _drain(load, options.drain_timeout)
    finally:
        stop.set()
        await load.close()
    alive = broker.returncode
    broker.stop()
    ns.stop()
    trends = watch.trends(options.warmup)
    log_errors = error_lines(broker.stderr_path, broker.stdout_path, ns.stderr_path, ns.stdout_path)
    owed = load.owed()
    failures: list[str] = []
    if alive is not None:
        failures.append(f"the broker exited during the run (code {alive})")
    if load.counts.sent == 0:
        failures.append("no send was acknowledged")
    if owed:
        failures.append(f"{sum(owed.values())} acknowledged messages not consumed by {len(owed)} groups")
    if log_errors:
        failures.append(f"{len(log_errors)} ERROR lines in the server logs")
    if len(trends) < 5:
        failures.append(f"too few samples after warm-up to fit ({len(watch.samples)} in all)")
    failures += [f"{t.name} grows {t.per_hour:+.1f}/h" for t in trends if not t.ok]
    return Report(
        options={"seconds": options.seconds, "seed": options.seed, "warmup": options.warmup},
        elapsed=time.monotonic() - started,
        samples=len(watch.samples),
        trends=trends,
        sent=load.counts.sent,
        consumed=sum(len(s) for s in load.consumed.values()),
        owed=owed,
        counts=asdict(load.counts),
        log_errors=log_errors,
        held_pulls_max=peaks.get("held_pulls", 0.0),
        connections_max=peaks.get("connections", 0.0),
        broker_exit=alive,
        failures=failures,
    )


def parse_args(argv: Sequence[str] | None) -> tuple[Options, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m orbitmq.testing.churn", description=__doc__)
    parser.add_argument("--seconds", type=float, required=True, help="how long the churn runs (10..86400)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--warmup", type=float, help="seconds not fitted (default: a third, at most 600)")
    parser.add_argument("--sample-interval", type=float, default=5.0)
    parser.add_argument("--rate", type=float, default=20.0, help="acknowledged sends per second in all")
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--workdir", type=Path, help="logs and store (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    try:
        shape = Shape(topics=args.topics, groups=args.groups, rate=args.rate)
        options = Options(
            seconds=args.seconds,
            seed=args.seed,
            warmup=args.warmup,
            sample_interval=args.sample_interval,
            shape=shape,
        )
    except ValueError as exc:
        parser.error(str(exc))
    return options, args


def main(argv: Sequence[str] | None = None) -> int:
    options, args = parse_args(argv)
    # SIGTERM stops the run as Ctrl-C does: the servers it started are stopped on the way out.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="orbitmq-churn-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        report = asyncio.run(run(options, workdir))
    except KeyboardInterrupt:
        print("churn: interrupted; the servers are stopped", file=sys.stderr)
        return 130
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(report.describe(), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(report.to_json(), indent=2), encoding="utf-8")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
