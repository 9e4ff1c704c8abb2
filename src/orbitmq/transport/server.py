"""RemotingServer: accept remoting connections and dispatch their requests to processors.

A connection that breaks the framing is closed alone; the server keeps serving everyone else. Idle
connections close as RocketMQ's `serverChannelMaxIdleTimeSeconds` does. This module must not know what
any request code means.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable, Coroutine
from typing import Any

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.frames import DEFAULT_MAX_FRAME_SIZE
from orbitmq.transport.busy_poll import busy_poll
from orbitmq.transport.connection import Connection
from orbitmq.transport.dispatch import Dispatcher, Processor, exception_text
from orbitmq.transport.limits import ServerLimits
from orbitmq.transport.tls import TLS_HANDSHAKE_BYTE, TlsMode, TlsServerSettings

__all__ = ["ConnectionListener", "Processor", "RemotingServer", "RequestHook"]

log = logging.getLogger("orbitmq.transport")

ConnectionListener = Callable[[Connection], None]
# Sees a request before its processor; returns None to let it through or the answer to send instead.
RequestHook = Callable[[Connection, RemotingCommand], RemotingCommand | None]

# A client that connects to a permissive server and sends nothing is dropped after the idle timeout
# (serverChannelMaxIdleTimeSeconds), or this long without one.
SNIFF_TIMEOUT = 120.0


class RemotingServer:
    """Each accepted socket becomes a `Connection` whose requests go through one `Dispatcher`; connections
    idle (no bytes read) for `idle_timeout` seconds are closed.

    An optional request hook (`set_request_hook`, the ACL check) sees every request before its processor
    and may answer it instead; without one, connections call the dispatcher directly (no cost).
    TLS (`tls=`): `enforcing` listens with an ssl context; `permissive` accepts itself, peeks at the first
    byte of each connection (0x16 = a TLS handshake, as RocketMQ's HandshakeHandler decides) and starts
    the connection with or without TLS accordingly.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        name: str = "server",
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_pending_per_code: int = 10000,
        idle_timeout: float | None = 120.0,
        clock: Clock = SYSTEM_CLOCK,
        tls: TlsServerSettings | None = None,
        limits: ServerLimits | None = None,
        processor_wrapper: Callable[[Processor], Processor] | None = None,
        busy_poll_micros: int = 0,
    ) -> None:
        self.host = host
        # serverBusyPollMicros (transport/busy_poll.py): poll on after an answer, for the next request.
        self.busy_poll = busy_poll(busy_poll_micros)
        # Given to each connection accepted from now on (Connection: before any bytes leave, after each
        # turn of received commands); the broker's store writes and dispatches gathered puts there.
        self.before_write: Callable[[], None] | None = None
        self.after_turn: Callable[[], None] | None = None
        self.tls = tls or TlsServerSettings()
        self._hook: RequestHook | None = None
        self._listen_socket: socket.socket | None = None
        self._accept_tasks: set[asyncio.Task[None]] = set()
        self.name = name
        self.limits = limits or ServerLimits(max_frame_size=max_frame_size)
        self.max_frame_size = self.limits.max_frame_size
        # Applied to every processor registered (the servers' request-independent checks, e.g. names).
        self._wrap = processor_wrapper
        self.idle_timeout = idle_timeout
        self._requested_port = port
        self._clock = clock
        self._dispatcher = Dispatcher(
            name=name,
            max_pending_per_code=max_pending_per_code,
            max_inflight_per_connection=self.limits.max_inflight_per_connection,
        )
        self._dispatcher.unsupported_log_limit = self.limits.max_unsupported_logged
        self._server: asyncio.Server | None = None
        self._connections: set[Connection] = set()
        self._on_open: list[ConnectionListener] = []
        self._on_close: list[ConnectionListener] = []
        self._idle_task: asyncio.Task[None] | None = None
        self.port = 0

    # ---- configuration ----------------------------------------------------------------------

    def register(self, code: int, processor: Processor, *, limit: int | None = None) -> None:
        """Route requests with `code` to `processor`; at most `limit` may be pending at once."""
        self._dispatcher.register(code, self._wrap(processor) if self._wrap else processor, limit=limit)

    def register_default(self, processor: Processor) -> None:
        """Route every code without its own processor to `processor`."""
        self._dispatcher.register_default(self._wrap(processor) if self._wrap else processor)

    def set_request_hook(self, hook: RequestHook | None) -> None:
        """Check every request with `hook` (connections accepted from now on)."""
        self._hook = hook

    def add_connection_listener(
        self, on_open: ConnectionListener | None = None, on_close: ConnectionListener | None = None
    ) -> None:
        if on_open is not None:
            self._on_open.append(on_open)
        if on_close is not None:
            self._on_close.append(on_close)

    # ---- lifecycle --------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def dispatcher(self) -> Dispatcher:
        """The request router (its `route_stats()` feed the metrics endpoint)."""
        return self._dispatcher

    @property
    def connections(self) -> frozenset[Connection]:
        return frozenset(self._connections)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        ctx = self.tls.context()
        if self.tls.mode is TlsMode.PERMISSIVE:
            assert ctx is not None
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            listen = socket.create_server((self.host, self._requested_port), family=family, backlog=1024)
            listen.setblocking(False)
            self._listen_socket = listen
            self.port = listen.getsockname()[1]
            self._spawn_accept(self._accept_loop(listen, ctx))
        else:
            self._server = await loop.create_server(
                self._new_connection,
                self.host,
                self._requested_port,
                reuse_address=True,
                backlog=1024,
                ssl=ctx,
            )
            sockets = self._server.sockets
            self.port = sockets[0].getsockname()[1] if sockets else self._requested_port
        if self.idle_timeout:
            self._idle_task = loop.create_task(self._close_idle_connections(self.idle_timeout))
        log.debug("%s listening on %s (tls %s)", self.name, self.address, self.tls.mode.value)

    async def stop(self) -> None:
        """Stop accepting, close every connection and cancel running processors."""
        if self._idle_task is not None:
            self._idle_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_task
            self._idle_task = None
        server, self._server = self._server, None
        if server is not None:
            server.close()
        listen, self._listen_socket = self._listen_socket, None
        accepting = list(self._accept_tasks)
        for task in accepting:
            task.cancel()
        if accepting:
            await asyncio.gather(*accepting, return_exceptions=True)
        if listen is not None:
            listen.close()
        connections = list(self._connections)
        for conn in connections:
            conn.close("server stopping")
        await self._dispatcher.stop()
        for conn in connections:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5.0)
        if server is not None:
            await server.wait_closed()

    # ---- internals --------------------------------------------------------------------------

    def _new_connection(self) -> Connection:
        conn = Connection(
            request_handler=self._dispatcher.handle if self._hook is None else self._guarded,
            max_frame_size=self.max_frame_size,
            name=self.name,
            clock=self._clock,
            on_open=self._opened,
            max_header_size=self.limits.max_header_size,
            max_ext_fields=self.limits.max_ext_fields,
            turn_budget=self.limits.turn_budget_millis / 1000,
            busy_poll=self.busy_poll,
            before_write=self.before_write,
            after_turn=self.after_turn,
        )
        conn.add_close_callback(self._closed)
        return conn

    def _guarded(self, conn: Connection, request: RemotingCommand) -> None:
        hook = self._hook
        try:
            refusal = hook(conn, request) if hook is not None else None
        except Exception as exc:
            log.exception("%s: request hook failed", self.name)
            refusal = RemotingCommand.response(ResponseCode.SYSTEM_ERROR, exception_text(exc))
        if refusal is None:
            self._dispatcher.handle(conn, request)
        elif not request.is_oneway:
            conn.send(refusal.response_to(request))

    def _spawn_accept(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._accept_tasks.add(task)
        task.add_done_callback(self._accept_tasks.discard)

    async def _accept_loop(self, listen: socket.socket, ctx: ssl.SSLContext) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _ = await loop.sock_accept(listen)
            except OSError as exc:
                log.warning("%s: accept failed: %s", self.name, exc)
                await asyncio.sleep(0.1)
                continue
            self._spawn_accept(self._sniff_and_start(sock, ctx))

    async def _sniff_and_start(self, sock: socket.socket, ctx: ssl.SSLContext) -> None:
        """Permissive mode: peek at the first byte, then start the connection with or without TLS."""
        loop = asyncio.get_running_loop()
        try:
            sock.setblocking(False)
            readable: asyncio.Future[None] = loop.create_future()
            fd = sock.fileno()
            loop.add_reader(fd, _set_once, readable)
            try:
                await asyncio.wait_for(readable, self.idle_timeout or SNIFF_TIMEOUT)
            finally:
                loop.remove_reader(fd)
            first = sock.recv(1, socket.MSG_PEEK)
            if not first:
                sock.close()
                return
            use_tls = first[0] == TLS_HANDSHAKE_BYTE
            await loop.connect_accepted_socket(self._new_connection, sock, ssl=ctx if use_tls else None)
        except asyncio.CancelledError:
            sock.close()
            raise
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            log.info("%s: connection dropped before it started: %r", self.name, exc)
            sock.close()

    def _opened(self, conn: Connection) -> None:
        if len(self._connections) >= self.limits.max_connections:
            log.warning(
                "%s: refusing %s: %d connections (serverMaxConnections)",
                self.name,
                conn.remote_address,
                len(self._connections),
            )
            conn.close("too many connections")
            return
        self._connections.add(conn)
        for listener in self._on_open:
            try:
                listener(conn)
            except Exception:
                log.exception("%s: connection open listener failed", self.name)

    def _closed(self, conn: Connection) -> None:
        self._connections.discard(conn)
        for listener in self._on_close:
            try:
                listener(conn)
            except Exception:
                log.exception("%s: connection close listener failed", self.name)

    async def _close_idle_connections(self, idle_timeout: float) -> None:
        interval = max(min(idle_timeout / 4, 10.0), 0.05)
        while True:
            await asyncio.sleep(interval)
            deadline = self._clock.monotonic() - idle_timeout
            for conn in list(self._connections):
                if conn.last_activity < deadline:
                    log.info(
                        "%s: closing %s idle for more than %ss", self.name, conn.remote_address, idle_timeout
                    )
                    conn.close(f"idle for more than {idle_timeout}s")


def _set_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
