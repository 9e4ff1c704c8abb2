"""`orbitmq bench`: run the BENCHMARKS.md workloads against orbitmq (or any RocketMQ 4.x cluster) and,
in the same run, against the peers (NATS JetStream, Redis Streams), and print one table with ratios.

Every case is bounded in time and count and stops by itself; only 127.0.0.1 servers are started, and
whatever the bench starts it stops by PID.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import orjson

from orbitmq.bench.options import QUICK_DEFAULTS, build_parser, check_args, meta
from orbitmq.bench.peers import parse_peer_list
from orbitmq.bench.progress import Progress
from orbitmq.bench.result import measurement_from_dict
from orbitmq.bench.runner import Bench
from orbitmq.bench.table import json_document, render

# Single-component benchmarks (no peers, no table): `orbitmq bench codec ...` runs that module's main().
SCRIPTS = {
    "codec": "orbitmq.bench.codec_bench",
    "store": "orbitmq.bench.store_bench",
    "broker-smoke": "orbitmq.bench.broker_smoke",
    "spark": "orbitmq.bench.spark_bench",
    "blocking": "orbitmq.bench.blocking_bench",
}


async def _main_async(bench: Bench, workloads: Sequence[str], peers: Sequence[str]) -> None:
    await bench.run(workloads, peers)


def run_script(name: str, argv: list[str]) -> int:
    """`orbitmq bench NAME ARGS...` for one of SCRIPTS (imported only then: spark_bench needs pyspark)."""
    import importlib

    result = importlib.import_module(SCRIPTS[name]).main(argv)
    return result if isinstance(result, int) else 0


def main(argv: list[str]) -> int:
    """Run `orbitmq bench ARGS`; 1 when a case failed. Examples:

    orbitmq bench W1 --serve --peers nats,redis
    orbitmq bench W1,W2,W3,W4 --serve --peers all --duration 5 --messages 50000
    orbitmq bench W1 -n 127.0.0.1:9876 --json
    orbitmq bench all --serve --quick        # every workload, W1-W10, with short defaults
    """
    if argv and argv[0] in SCRIPTS:
        return run_script(argv[0], argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**QUICK_DEFAULTS)
        args = parser.parse_args(argv)
    if args.table_from is not None:
        doc = orjson.loads(args.table_from.read_bytes())
        print(render([measurement_from_dict(r) for r in doc["results"]]))
        return 0
    workloads = check_args(parser, args)
    peers = parse_peer_list(args.peers)

    own_workdir = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="orbitmq-bench-")) if own_workdir else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    progress = Progress(sys.stderr)
    bench = Bench(args, workdir, progress)
    from orbitmq.transport.loop import run

    try:
        run(_main_async(bench, workloads, peers))
    except KeyboardInterrupt:
        progress.end("interrupted; servers stopped")
    finally:
        if own_workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep:
            progress.end(f"work dir kept: {workdir}")
    if args.json:
        sys.stdout.write(
            orjson.dumps(json_document(bench.results, meta(args, workloads, peers))).decode() + "\n"
        )
    else:
        print(render(bench.results))
    failed = [m for m in bench.results if m.skipped and m.note.startswith("failed")]
    return 1 if failed else 0
