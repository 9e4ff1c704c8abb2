"""The one start-up of the server commands (`orbitmq broker`, `orbitmq namesrv`, `orbitmq serve`):
logging, the ops-extra check before anything starts, services stopped in the reverse order of their
start, the `... listening on ...` lines on stdout that tools and orbitmq.testing read, the wait for
SIGTERM/SIGINT, and each failure as one line on stderr (exit code 2: bad settings; 1: store or port).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import importlib
import logging
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from orbitmq.common.errors import OrbitError, StoreError
from orbitmq.transport import loop

if TYPE_CHECKING:
    from prometheus_client.registry import Collector

# What the ops features (Prometheus endpoint, web console) import; the `ops` extra installs them.
OPS_MODULES = ("prometheus_client", "aiohttp")
_BIND_ERRORS = (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES)


class ListenError(Exception):
    """A port could not be bound; the message names the flag that chooses another."""


class SettingsError(ValueError):
    """A setting the command cannot run with (exit code 2)."""


class Service(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=Service)
T = TypeVar("T")


def add_server_arguments(parser: argparse.ArgumentParser, conf: str) -> None:
    """The flags every server command has: its conf file, the Prometheus port and the log level."""
    parser.add_argument("-c", "--config", help=f"{conf} (Java properties, RocketMQ names)")
    parser.add_argument(
        "--metrics-port", type=int, help="Prometheus endpoint port (overrides metricsPort; 0 = a free port)"
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (a free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535; 0 picks a free one)")
    return port


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def require_extra(extra: str, modules: tuple[str, ...], feature: str) -> None:
    """Refuse `feature` at once, before any server starts, when the `extra` it needs is not installed."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            raise SettingsError(
                f"{feature} needs the {extra} extra ({module} is missing): pip install 'orbitmq[{extra}]'"
            ) from None


def require_ops_extra(feature: str) -> None:
    """The metrics endpoint and the console need the ops extra."""
    require_extra("ops", OPS_MODULES, feature)


def require_grpc_extra(feature: str) -> None:
    """The gRPC endpoint for RocketMQ 5.x clients needs the grpc extra."""
    require_extra("grpc", ("grpc", "google.protobuf"), feature)


def listen_error(what: str, host: str, port: int, flag: str, exc: OSError) -> Exception:
    """The error to raise for a failed bind: a ListenError naming `flag` when the port itself is the
    problem, `exc` unchanged otherwise."""
    if exc.errno not in _BIND_ERRORS:
        return exc
    if exc.errno == errno.EADDRINUSE:
        return ListenError(f"{what} port {port} is already in use; choose another with {flag}")
    return ListenError(f"{what} cannot listen on {host}:{port}: {exc.strerror or exc}")


class Startup:
    """What one server process runs: the services it started (stopped in reverse order when the process
    stops or a later start fails) and the lines it announces once everything listens."""

    def __init__(self) -> None:
        self.announce: list[str] = []
        self.exit_code = 0
        self._stack = contextlib.AsyncExitStack()
        self._stop = asyncio.Event()

    def stop(self, exit_code: int) -> None:
        """Stop the process as a stop signal would, then exit with `exit_code` (e.g. a child died)."""
        self.exit_code = exit_code
        self._stop.set()

    async def start(self, service: S, bind: tuple[str, str, int, str] | None = None) -> S:
        """Start `service`; with `bind` = (what, host, port, flag), a port that cannot be bound is a
        ListenError naming the flag."""
        try:
            await service.start()
        except OSError as exc:
            if bind is None:
                raise
            raise listen_error(*bind, exc) from None
        self._stack.push_async_callback(service.stop)
        return service

    def on_stop(self, stop: Callable[[], Awaitable[Any]]) -> None:
        """Run `stop` at shutdown (before what was started earlier)."""
        self._stack.push_async_callback(stop)

    async def start_metrics(self, collectors: Iterable[Collector], host: str, port: int) -> None:
        """The Prometheus endpoint on `port` (0 = a free one), announced as `metrics listening on URL`."""
        from orbitmq.transport.metrics_http import start_metrics

        metrics = await start_metrics(collectors, host, port)
        self.on_stop(metrics.stop)
        self.announce.append(f"metrics listening on {metrics.url}")

    async def serve(self, start: Callable[[Startup], Awaitable[None]]) -> int:
        """Run `start(self)`, announce, wait for the stop signal (or `stop()`), then stop everything in
        reverse; the exit code."""
        async with self._stack:
            await start(self)
            await loop.wait_for_stop_signal(self.announce, self._stop)
        return self.exit_code


def run_server(prog: str, start: Callable[[Startup], Awaitable[None]]) -> int:
    """Run a server process until its stop signal; the exit code, every failure one line on stderr."""
    try:
        return loop.run(Startup().serve(start))
    except (OSError, StoreError, ListenError) as exc:  # the store or a port: what to fix, no traceback
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OrbitError) as exc:  # found at start: the ACL file, TLS settings
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2


def read_settings(prog: str, build: Callable[[], T]) -> T | None:
    """`build()`'s config, or None (exit code 2) after one line on stderr naming the bad file or value."""
    try:
        return build()
    except (OSError, ValueError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None


def server_main(
    prog: str,
    log_level: str,
    build: Callable[[], T],
    start: Callable[[Startup, T], Awaitable[None]],
) -> int:
    """A server command from its parsed flags: logging, the settings `build()` reads (exit code 2 when
    they are bad), then `start(run, settings)` until the stop signal."""
    configure_logging(log_level)
    settings = read_settings(prog, build)
    if settings is None:
        return 2
    return run_server(prog, lambda run: start(run, settings))
