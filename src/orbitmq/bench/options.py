"""`orbitmq bench`'s command line: the workload names, the flags and their checks, the run's metadata."""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ALL_WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10")
# `--quick`: defaults short enough for `orbitmq bench all --serve --quick` to finish in minutes; flags
# given explicitly still win.
QUICK_DEFAULTS: dict[str, Any] = {
    "duration": 3.0,
    "messages": 20_000,
    "drain_timeout": 60.0,
    "log_mb": 64,
    "topics": [1, 100],
    "backlog": [0, 100_000],
    "spark_messages": 200_000,
}


def parse_workloads(items: Sequence[str]) -> list[str]:
    names: list[str] = []
    for item in items:
        for raw in item.replace(" ", ",").split(","):
            part = raw.strip().upper()
            if not part:
                continue
            if part == "ALL":
                names += [w for w in ALL_WORKLOADS if w not in names]
                continue
            if part not in ALL_WORKLOADS:
                raise argparse.ArgumentTypeError(
                    f"unknown workload {part!r} (known: {', '.join(ALL_WORKLOADS)})"
                )
            if part not in names:
                names.append(part)
    return names


def _int_list(text: str, minimum: int) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or any(v < minimum for v in values):
        what = "positive integers" if minimum == 1 else f"integers >= {minimum}"
        raise argparse.ArgumentTypeError(f"expected {what}: {text!r}")
    return values


def parse_int_list(text: str) -> list[int]:
    return _int_list(text, 1)


def parse_count_list(text: str) -> list[int]:
    """Like parse_int_list, but 0 is allowed (W9's empty-store backlog level)."""
    return _int_list(text, 0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="orbitmq bench",
        description="Benchmark orbitmq or any RocketMQ 4.x cluster, with peers measured in the same run.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="workloads: W1 sync send, W2 pipelined + batch send, W3 catch-up consume, W4 end-to-end "
        "latency at a fixed rate, W5 SYNC_FLUSH sync send, W6 replication (SYNC_MASTER and ASYNC_MASTER with "
        "a slave: msgs/s and lag), W7 Spark connector (orbitmq bench spark), W8 recovery after SIGKILL, "
        "W9 topic scaling, W10 cold start. What they measure, the peers, how to read the table and the "
        "latest figures: BENCHMARKS.md at the repository root; how to run: bench/README.md. "
        "Single components, each with its own --help: "
        "orbitmq bench codec|store|broker-smoke|spark|blocking [ARGS]",
    )
    p.add_argument("workloads", nargs="*", help="W1..W10, comma-separated, or 'all'")
    p.add_argument("--table-from", type=Path, help="print the table of a saved --json run and exit")
    target = p.add_mutually_exclusive_group()
    target.add_argument("-n", "--namesrv", help="nameserver address of a running cluster (127.0.0.1:9876)")
    target.add_argument("--serve", action="store_true", help="start an embedded `orbitmq serve` for the run")
    p.add_argument(
        "--serve-brokers",
        type=int,
        default=1,
        help="with --serve (and for W7, which starts its own): broker processes (`orbitmq serve --brokers "
        "N`, default 1)",
    )
    p.add_argument(
        "--busy-poll-us",
        type=int,
        default=None,
        help="orbitmq only: the broker (serverBusyPollMicros, with --serve) and the orbitmq client "
        "(ClientConfig.busy_poll_us) poll up to N us after each write instead of sleeping, the window "
        "adapting to how soon data comes (0: neither polls; default: each side's own default, the "
        "client up to 200 us, the broker off)",
    )
    p.add_argument("--peers", default="", help="peers to run beside orbitmq: nats,redis | all | none")
    p.add_argument(
        "--driver",
        choices=("auto", "client", "raw", "both"),
        default="auto",
        help="orbitmq side: the orbitmq client library, raw protocol requests, or both (auto: client "
        "when orbitmq.client has a Producer, else raw)",
    )
    p.add_argument("--no-orbitmq", action="store_true", help="run the peers only")
    p.add_argument("-d", "--duration", type=float, default=10.0, help="measured seconds per case (10)")
    p.add_argument("-s", "--size", type=int, default=1024, help="message body bytes (1024)")
    p.add_argument("-q", "--queues", type=int, default=8, help="queues per topic (8)")
    p.add_argument("--senders", type=parse_int_list, default=None, help="W1 senders (1,4); W5 (4,32)")
    p.add_argument("--in-flight", type=int, default=256, help="W2 pipelined window (256)")
    p.add_argument("--batch", type=int, default=32, help="W2 messages per batch (32)")
    p.add_argument("--batch-senders", type=int, default=4, help="W2 concurrent batch senders (4)")
    p.add_argument("-m", "--messages", type=int, default=100_000, help="W3 messages to drain (100,000)")
    p.add_argument("--rate", type=float, default=2000.0, help="W4 msgs/s (2000)")
    p.add_argument("--drain-timeout", type=float, default=120.0, help="W3 bound on the drain, s (120)")
    p.add_argument(
        "-r",
        "--repeat",
        type=int,
        default=1,
        help="run each case N times, systems interleaved, and report the median run (1)",
    )
    p.add_argument("--log-mb", type=int, default=256, help="W8 commit log size to recover, MiB (256)")
    p.add_argument("--topics", type=parse_int_list, default=[1, 100, 1000], help="W9 topic counts")
    p.add_argument(
        "--backlog",
        type=parse_count_list,
        default=[0, 1_000_000],
        help="W9 stored-message backlogs, one fresh server each (0,1000000; BENCHMARKS.md says "
        "0,10000000: ~12 GiB of store, written in minutes and removed afterwards)",
    )
    p.add_argument(
        "--no-route-probe",
        dest="route_probe",
        action="store_false",
        help="W1 on orbitmq: no route-query latency row (a separate process asks the nameserver for a "
        "route every 20 ms while the senders run)",
    )
    p.add_argument("--replication-senders", type=int, default=4, help="W6 sync senders per role (4)")
    p.add_argument(
        "--spark-messages",
        type=int,
        default=200_000,
        help="W7 messages read and written by orbitmq bench spark (200,000; BENCHMARKS.md says 1,000,000)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="short defaults for a whole run (-d 3, -m 20000, --log-mb 64, --topics 1,100, "
        "--backlog 0,100000); "
        "explicit flags win",
    )
    p.add_argument("--json", action="store_true", help="print a JSON document instead of the table")
    p.add_argument("--workdir", type=Path, help="where servers keep their files (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the work dir (server logs) afterwards")
    p.add_argument("--peers-dir", type=Path, default=None, help="directory of the peer drivers")
    p.add_argument(
        "--rocketmq-home",
        type=Path,
        default=None,
        help="an installed Apache RocketMQ 4.9.x (lib/*.jar with the example jar, conf/; default "
        "$ORBITMQ_BENCH_ROCKETMQ_HOME): with --serve, W5 runs both brokers SYNC_FLUSH with Apache's "
        "benchmark Producer and orbitmq's client on each, and W1 adds a Java Producer case on both "
        "(see orbitmq/bench/rmq_compare.py)",
    )
    return p


def meta(args: argparse.Namespace, workloads: Sequence[str], peers: Sequence[str]) -> dict[str, Any]:
    return {
        "workloads": list(workloads),
        "peers": list(peers),
        "target": "serve" if args.serve else (args.namesrv or "127.0.0.1:9876"),
        "duration_s": args.duration,
        "body_size": args.size,
        "queues": args.queues,
        "messages": args.messages,
        "rate": args.rate,
        "repeat": args.repeat,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


POSITIVE = ("duration", "rate", "drain_timeout")
AT_LEAST_ONE = (
    "size",
    "queues",
    "in_flight",
    "batch",
    "batch_senders",
    "messages",
    "repeat",
    "replication_senders",
    "spark_messages",
)


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The workloads named by `args`; a bad flag or value exits through `parser.error`."""
    if not args.workloads:
        parser.error("name at least one workload (W1..W10 or all)")
    try:
        workloads = parse_workloads(args.workloads)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    if args.namesrv and not args.namesrv.startswith("127.0.0.1:"):
        parser.error("the bench only drives 127.0.0.1 (use -n 127.0.0.1:PORT)")
    for name in POSITIVE:
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    for name in AT_LEAST_ONE:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.size < 8:
        parser.error("--size must be at least 8 (the latency stamp)")
    return workloads
