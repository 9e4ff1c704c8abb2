"""RemotingClient: pooled connections per address, invoke/invoke_oneway, server->client requests.

The client side of every remoting conversation (producer, consumer, admin, broker to namesrv), so it
must not know what any request code means: requests the server sends to us go through a `Dispatcher`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import ConnectError
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.frames import DEFAULT_MAX_FRAME_SIZE
from orbitmq.transport.busy_poll import busy_poll
from orbitmq.transport.connection import Connection, ResponseCallback, split_address
from orbitmq.transport.dispatch import Dispatcher, Processor

log = logging.getLogger("orbitmq.transport")

RpcHook = Callable[[RemotingCommand], None]


class RemotingClient:
    """One `Connection` per "ip:port", opened on demand (concurrent callers share one connect attempt) and
    dropped from the pool when it closes, so the next call reconnects. Requests the server sends
    (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...) go through a `Dispatcher` like a server's.
    An optional `rpc_hook` changes every outgoing request just before it is sent (the ACL signature, as
    RocketMQ's RPCHook.doBeforeRequest); `ssl_context` makes every connection TLS.
    """

    def __init__(
        self,
        *,
        connect_timeout: float = 3.0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        idle_timeout: float | None = None,
        name: str = "client",
        clock: Clock = SYSTEM_CLOCK,
        rpc_hook: RpcHook | None = None,
        ssl_context: ssl.SSLContext | None = None,
        busy_poll_us: float = 0.0,
    ) -> None:
        self.rpc_hook = rpc_hook
        # Poll on after each request instead of sleeping until its answer (transport/busy_poll.py).
        self.busy_poll = busy_poll(busy_poll_us)
        self.ssl = ssl_context
        self.connect_timeout = connect_timeout
        self.max_frame_size = max_frame_size
        self.idle_timeout = idle_timeout
        self.name = name
        self._clock = clock
        self._dispatcher = Dispatcher(name=name)
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Future[Connection]] = {}
        self._idle_task: asyncio.Task[None] | None = None
        self._closed = False

    def register(self, code: int, processor: Processor, *, limit: int | None = None) -> None:
        """Handle requests with `code` that servers send to this client."""
        self._dispatcher.register(code, processor, limit=limit)

    @property
    def connections(self) -> dict[str, Connection]:
        return dict(self._connections)

    async def get_connection(self, addr: str) -> Connection:
        """The open pooled connection to `addr`, connecting (within connect_timeout) if needed."""
        conn = self._connections.get(addr)
        if conn is not None and not conn.closed:
            return conn
        if self._closed:
            raise ConnectError(f"{self.name} is closed")
        pending = self._connecting.get(addr)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
        self._connecting[addr] = future
        try:
            conn = await self._connect(addr)
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc if isinstance(exc, Exception) else ConnectError(str(exc)))
                future.exception()  # retrieved: waiters re-raise it, nobody else needs to
            raise
        finally:
            del self._connecting[addr]
        future.set_result(conn)
        return conn

    async def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
        conn = self._connections.get(addr)
        if conn is None or conn.closed:  # the pooled connection needs no coroutine
            conn = await self.get_connection(addr)
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        return await conn.invoke(request, timeout)

    def invoke_callback(
        self, addr: str, request: RemotingCommand, timeout: float, callback: ResponseCallback
    ) -> bool:
        """`Connection.invoke_callback` on the pooled connection to `addr`, without a coroutine. False
        (nothing sent, `callback` never called) when there is no open pooled connection or its writes
        are paused: the caller then uses `invoke`, which connects or waits."""
        conn = self._connections.get(addr)
        if conn is None or conn.closed or conn.writing_paused:
            return False
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        conn.invoke_callback(request, timeout, callback)
        return True

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        conn = await self.get_connection(addr)
        if self.rpc_hook is not None:
            self.rpc_hook(request)
        await conn.invoke_oneway(request)

    def close_connection(self, addr: str, reason: str = "closed by client") -> None:
        conn = self._connections.pop(addr, None)
        if conn is not None:
            conn.close(reason)

    async def close(self) -> None:
        """Close every connection and stop handler tasks; the client cannot be used afterwards."""
        self._closed = True
        if self._idle_task is not None:
            self._idle_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_task
            self._idle_task = None
        connections = list(self._connections.values())
        self._connections.clear()
        for conn in connections:
            conn.close("client closed")
        await self._dispatcher.stop()
        for conn in connections:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5.0)

    # ---- internals --------------------------------------------------------------------------

    async def _connect(self, addr: str) -> Connection:
        try:
            host, port = split_address(addr)
        except ValueError as exc:
            raise ConnectError(str(exc)) from None
        loop = asyncio.get_running_loop()

        def factory() -> Connection:
            return Connection(
                request_handler=self._dispatcher.handle,
                max_frame_size=self.max_frame_size,
                name=self.name,
                clock=self._clock,
                busy_poll=self.busy_poll,
            )

        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    factory, host, port, ssl=self.ssl, server_hostname="" if self.ssl else None
                ),
                self.connect_timeout,
            )
        except TimeoutError:
            raise ConnectError(f"connect to {addr} timed out after {self.connect_timeout}s") from None
        except ConnectionRefusedError:
            # the plain words users search for, not "[Errno 111] Connect call failed (...)"
            raise ConnectError(f"connect to {addr} failed: connection refused") from None
        except OSError as exc:
            raise ConnectError(f"connect to {addr} failed: {exc.strerror or exc}") from None
        if self._closed:
            conn.close("client closed")
            raise ConnectError(f"{self.name} is closed")
        self._connections[addr] = conn
        conn.add_close_callback(lambda c: self._forget(addr, c))
        if self.idle_timeout and self._idle_task is None:
            self._idle_task = loop.create_task(self._close_idle_connections(self.idle_timeout))
        return conn

    def _forget(self, addr: str, conn: Connection) -> None:
        if self._connections.get(addr) is conn:
            del self._connections[addr]

    async def _close_idle_connections(self, idle_timeout: float) -> None:
        interval = max(min(idle_timeout / 4, 10.0), 0.05)
        while True:
            await asyncio.sleep(interval)
            deadline = self._clock.monotonic() - idle_timeout
            for conn in list(self._connections.values()):
                if conn.last_activity < deadline and conn.pending_count == 0:
                    conn.close(f"idle for more than {idle_timeout}s")
