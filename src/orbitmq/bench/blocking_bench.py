"""`orbitmq bench blocking`: one thread sending one message at a time through a blocking client,
orbitmq's `Producer` against redis-py's synchronous `Redis.xadd`, in the same run.

W1 drives the asyncio clients; many Python programs send from plain threads instead. What is sent and
reported: DESCRIPTION (the verb's --help).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orbitmq.bench.cpu import cpu_seconds, thread_wait_seconds
from orbitmq.bench.driver import ServerHandle
from orbitmq.bench.orbitmq_server import start_orbitmq
from orbitmq.bench.peers import default_peers_dir, load_peer
from orbitmq.bench.raw_driver import RawDriver

DESCRIPTION = """\
One thread sending one message at a time through a blocking client: orbitmq's `Producer` (the
README's `from orbitmq import Producer`) against redis-py's synchronous `Redis.xadd`, in the same run.

    orbitmq bench blocking [--messages 10000] [--size 1024] [--rounds 3] [--no-redis]
                           [--orderly | --batch N]

`--orderly` sends with `Producer.send_orderly` (keys cycling over 16: a selector picks the queue)
against the same `xadd` (a stream is one ordered log). `--batch N` sends N messages per call: orbitmq's
`send_batch` of N against a redis-py pipeline of N `xadd`s (one round trip each); the figures are still
per message.

W1 drives the asyncio clients; many Python programs send from plain threads instead. This starts an
`orbitmq serve` and a redis-server (the Redis peer's own start-up: appendonly, appendfsync everysec) in
a temporary directory, then, `--rounds` times and alternating, sends `--messages` bodies of `--size`
bytes one after the other with each client, after a warm-up of 1,000. It prints each system's median
rate, the CPU per message of the server and of this process (all its threads: the blocking
Producer also runs the client's loop thread), the run-queue wait of each (share of the round, server /
this process), and orbitmq's rate over redis-py's.
"""


TOPIC = "BlockingBench"
WARM_UP = 1000


@dataclass
class Round:
    rate: float  # msgs/s
    server_us: float  # server CPU per message
    client_us: float  # this process's CPU per message
    wait: tuple[float, float] = (0.0, 0.0)  # run-queue wait, share of the round: server, this process


@dataclass
class System:
    name: str
    rounds: list[Round] = field(default_factory=list)

    def median(self) -> Round:
        """The round with the median rate (its CPU figures with it)."""
        ordered = sorted(self.rounds, key=lambda r: r.rate)
        return ordered[(len(ordered) - 1) // 2]


def measure(send: Callable[[], object], count: int, server_pids: Sequence[int], per_call: int = 1) -> Round:
    """`count` calls of `send`, one after the other, each sending `per_call` messages: the rate and
    both sides' CPU per message."""

    def server_cpu() -> float:
        return sum(cpu_seconds(pid) or 0.0 for pid in server_pids)

    def own_cpu() -> float:  # (every thread of this process: the blocking Producer's loop thread too)
        return cpu_seconds(os.getpid()) or 0.0

    def waits() -> tuple[float, float]:  # run-queue waits, all threads: the box is shared
        server = sum(thread_wait_seconds(pid) or 0.0 for pid in server_pids)
        return server, thread_wait_seconds(os.getpid()) or 0.0

    server_before, own_before, waits_before = server_cpu(), own_cpu(), waits()
    started = time.perf_counter()
    for _ in range(count):
        send()
    wall = time.perf_counter() - started
    server, own = server_cpu() - server_before, own_cpu() - own_before
    waited = tuple((after - before) / wall for after, before in zip(waits(), waits_before, strict=True))
    messages = count * per_call
    return Round(messages / wall, server / messages * 1e6, own / messages * 1e6, (waited[0], waited[1]))


def report(systems: Sequence[System]) -> list[str]:
    """The printed lines: one per system, then orbitmq's rate over each other system's."""
    lines = [
        f"{'system':<24}{'msgs/s':>10}{'server µs/msg':>15}{'client µs/msg':>15}{'rq wait %':>11}"
        "  rounds (msgs/s)"
    ]
    for s in systems:
        m = s.median()
        rounds = ", ".join(f"{r.rate:,.0f}" for r in s.rounds)
        wait = f"{m.wait[0] * 100:.0f}/{m.wait[1] * 100:.0f}"
        lines.append(
            f"{s.name:<24}{m.rate:>10,.0f}{m.server_us:>15.0f}{m.client_us:>15.0f}{wait:>11}  {rounds}"
        )
    ours = systems[0].median().rate
    for other in systems[1:]:
        lines.append(f"{systems[0].name} / {other.name}: {ours / other.median().rate:.2f}")
    return lines


@dataclass(frozen=True)
class Shape:
    """What one call sends: one message (`send`, or `send_orderly` when `orderly`) or a batch."""

    orderly: bool = False
    batch: int = 1

    def orbitmq_name(self) -> str:
        if self.batch > 1:
            return f"orbitmq send_batch({self.batch})"
        return "orbitmq send_orderly" if self.orderly else "orbitmq Producer"

    def redis_name(self) -> str:
        return f"redis-py pipeline {self.batch} xadd" if self.batch > 1 else "redis-py Redis.xadd"


def _orbitmq_sender(
    namesrv: str, body: bytes, shape: Shape
) -> tuple[Callable[[], object], Callable[[], None]]:
    from orbitmq import Message, Producer

    producer = Producer("bench_blocking", namesrv)
    producer.start()
    keys = iter(range(1 << 62))

    def send() -> object:
        return producer.send(Message(TOPIC, body))

    def send_orderly() -> object:
        return producer.send_orderly(Message(TOPIC, body), key=next(keys) % 16)

    def send_batch() -> object:
        return producer.send_batch([Message(TOPIC, body) for _ in range(shape.batch)])

    chosen = send_batch if shape.batch > 1 else send_orderly if shape.orderly else send
    return chosen, producer.shutdown


def _redis_sender(address: str, body: bytes, shape: Shape) -> tuple[Callable[[], object], Callable[[], None]]:
    import redis

    host, _, port = address.rpartition(":")
    client = redis.Redis(host=host, port=int(port))

    def send() -> object:
        return client.xadd(TOPIC, {"b": body}, maxlen=100_000, approximate=True)

    def send_batch() -> object:
        pipe = client.pipeline(transaction=False)
        for _ in range(shape.batch):
            pipe.xadd(TOPIC, {"b": body}, maxlen=100_000, approximate=True)
        return pipe.execute()

    return (send_batch if shape.batch > 1 else send), client.close


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="orbitmq bench blocking",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-redis", action="store_true", help="orbitmq only")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--orderly", action="store_true", help="orbitmq sends with send_orderly")
    kind.add_argument("--batch", type=int, default=1, help="messages per call (send_batch, a pipeline)")
    args = parser.parse_args(argv)
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    shape = Shape(orderly=args.orderly, batch=args.batch)
    calls = max(args.messages // shape.batch, 1)
    body = b"x" * args.size
    workdir = Path(tempfile.mkdtemp(prefix="orbitmq-blocking-bench-"))
    servers: list[ServerHandle] = []
    closers: list[Callable[[], None]] = []
    try:
        orbitmq_server = start_orbitmq(workdir / "orbitmq")
        servers.append(orbitmq_server)

        async def create_topic() -> None:
            admin = RawDriver(orbitmq_server.address)
            await admin.open()
            try:
                await admin.create_topic(TOPIC, 8)
            finally:
                await admin.close()

        asyncio.run(create_topic())
        send, close = _orbitmq_sender(orbitmq_server.address, body, shape)
        closers.append(close)
        # (name, send, server pids)
        contenders: list[tuple[str, Callable[[], object], list[int]]] = [
            (shape.orbitmq_name(), send, orbitmq_server.pids)
        ]
        if not args.no_redis:
            if shutil.which("redis-server") is None:
                print("redis-server is not installed: orbitmq only (bench/peers/install.sh installs it)")
            else:
                peer = load_peer("redis", default_peers_dir())
                (workdir / "redis").mkdir()
                redis_server: ServerHandle = peer.start_server(workdir / "redis")
                servers.append(redis_server)
                send, close = _redis_sender(redis_server.address, body, shape)
                closers.append(close)
                contenders.append((shape.redis_name(), send, redis_server.pids))
        systems = [System(name) for name, _, _ in contenders]
        for _, send, _ in contenders:
            for _ in range(max(WARM_UP // shape.batch, 1)):
                send()
        for _ in range(args.rounds):  # alternating: each round measures every system once
            for system, (_, send, pids) in zip(systems, contenders, strict=True):
                system.rounds.append(measure(send, calls, pids, shape.batch))
    finally:
        for close in reversed(closers):
            close()
        for server in reversed(servers):
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    per_call = f", {shape.batch} per call" if shape.batch > 1 else ""
    print(
        f"\none thread, {calls * shape.batch:,} sends of {args.size} B per round{per_call}, "
        f"{args.rounds} rounds, medians"
    )
    for line in report(systems):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
