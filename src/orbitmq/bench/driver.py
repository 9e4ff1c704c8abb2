"""What a benchmarked system must offer the workloads: the `Driver` base class and `ServerHandle`.

Every workload is written once against these few operations, so all systems do the same work;
nothing here knows any particular system.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Consumers hand the bodies they receive to the workload in batches (one call per pull/fetch).
OnBodies = Callable[[Sequence[bytes]], None]


class DriverUnavailable(Exception):
    """The system cannot be benchmarked here (binary or client library missing, feature absent)."""


@dataclass
class ServerHandle:
    """A server process started for the run; `stop()` ends it by PID (SIGTERM, then SIGKILL)."""

    name: str
    address: str
    process: subprocess.Popen[bytes] | None = None
    workdir: Path | None = None
    extra_pids: list[int] = field(default_factory=list)
    stopper: Callable[[], None] | None = None
    killer: Callable[[], None] | None = None

    @property
    def pids(self) -> list[int]:
        own = [self.process.pid] if self.process is not None else []
        return own + self.extra_pids

    def kill(self) -> None:
        """SIGKILL, no clean shutdown (W8 recovery)."""
        if self.killer is not None:
            self.killer()
        elif self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self, timeout: float = 10.0) -> None:
        if self.stopper is not None:
            self.stopper()
            return
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)


class Driver(ABC):
    """One client of one system. Methods are called from a single asyncio loop.

    A driver wraps one client (orbitmq's client, the raw-protocol driver, NATS JetStream, Redis Streams)
    behind what the workloads need: make a fresh topic, send one message and wait for the ack, send a
    window of messages pipelined, send a batch, and consume a topic from its start.
    """

    system: str = "?"
    # Bodies arrive as the bytes that were sent (the latency stamp is in the first 8 bytes).
    max_batch: int = 32
    # Whether the server's run-queue wait is summed over all its threads (a JVM) or read from the main
    # thread only (orbitmq's event loop, the peers' single-threaded servers).
    server_all_threads: bool = False

    def __init__(self, server: ServerHandle | None = None) -> None:
        self.server = server

    @property
    def server_pids(self) -> list[int]:
        return self.server.pids if self.server is not None else []

    async def open(self) -> None:  # noqa: B027 - optional hook
        """Connect (called once before any workload)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Disconnect (called once at the end)."""

    @abstractmethod
    async def create_topic(self, topic: str, queues: int) -> None:
        """Make an empty topic/stream with `queues` queues (where the system has queues)."""

    async def delete_topic(self, topic: str) -> None:  # noqa: B027 - optional hook
        """Free what `create_topic` and the sends used (disk, memory), best effort."""

    @abstractmethod
    async def send(self, topic: str, body: bytes) -> None:
        """Send one message and return once the server acknowledged it as stored."""

    async def send_window(self, topic: str, bodies: Sequence[bytes]) -> None:
        """Send all bodies without waiting in between, then wait for every ack (pipelining)."""
        await asyncio.gather(*(self.send(topic, body) for body in bodies))

    async def send_batch(self, topic: str, bodies: Sequence[bytes]) -> None:
        """Send bodies as one batch where the system has batches (default: a pipelined window)."""
        await self.send_window(topic, bodies)

    @abstractmethod
    async def consume(self, topic: str, group: str, on_bodies: OnBodies, stop: asyncio.Event) -> None:
        """Consume `topic` from its first message, acknowledging/committing as the system's consumers
        do, calling on_bodies for each received batch, until `stop` is set."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for servers that cannot bind port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for_port(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Block until something accepts TCP connections on host:port (or the process died / timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise DriverUnavailable(f"server exited with code {proc.returncode} before listening")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise DriverUnavailable(f"nothing listening on {host}:{port} after {timeout:.0f} s") from None
            time.sleep(0.02)


def launch_server(
    name: str, binary: str, workdir: Path, argv: Callable[[str, int, Path], list[str]]
) -> ServerHandle:
    """Start a peer's server: `argv(path of binary, free 127.0.0.1 port, data dir workdir/name)`, its
    output in workdir/<binary>.log; returns once it listens. DriverUnavailable when not installed."""
    path = shutil.which(binary)
    if path is None:
        raise DriverUnavailable(f"{binary} not installed (bench/peers/install.sh installs it)")
    data = workdir / name
    data.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = (workdir / f"{binary}.log").open("wb")
    proc = subprocess.Popen(argv(path, port, data), stdout=log, stderr=subprocess.STDOUT)
    handle = ServerHandle(name, f"127.0.0.1:{port}", proc, workdir)
    try:
        wait_for_port("127.0.0.1", port, 15, proc)
    except Exception:
        handle.stop()
        raise
    return handle


STAMP_BYTES = 8


def make_body(size: int, seed: int = 0) -> bytes:
    """A body of `size` random-looking bytes (random bodies defeat any compression on the way)."""
    return (
        os.urandom(max(size, STAMP_BYTES)) if seed == 0 else bytes((seed * 7 + i) % 251 for i in range(size))
    )


def stamp_body(template: bytes, now_ns: int) -> bytes:
    """`template` with its first 8 bytes replaced by a monotonic ns timestamp (W4 latency)."""
    return now_ns.to_bytes(STAMP_BYTES, "big") + template[STAMP_BYTES:]


def read_stamp(body: bytes | memoryview) -> int:
    return int.from_bytes(body[:STAMP_BYTES], "big")
