"""One remoting connection over TCP: framing, opaque -> waiter correlation, oneway, timeouts, close.

An `asyncio.Protocol` (bytes go from the socket straight into the `FrameDecoder`), symmetrical: both
sides send requests. A frame that breaks the protocol closes this connection only; writes use
`writelines`, so bodies are never copied. It knows no request codes; pending requests: pending.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Final, TypeAlias, cast

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import ConnectError, RemoteProtocolError
from orbitmq.protocol.command import (
    DEFAULT_MAX_EXT_FIELDS,
    RemotingCommand,
    decode_command,
    encode_command,
    next_opaque,
)
from orbitmq.protocol.frames import DEFAULT_MAX_FRAME_SIZE, FrameDecoder
from orbitmq.transport.address import format_peer, split_address
from orbitmq.transport.busy_poll import BusyPoll
from orbitmq.transport.log_limit import LogLimiter
from orbitmq.transport.pending import Pending, ResponseCallback, Waiter, answer, expire, fail

# split_address and ResponseCallback: still importable from here, where they used to live.
__all__ = ["Connection", "ResponseCallback", "split_address"]

log: Final = logging.getLogger("orbitmq.transport")

# seconds of request handling one connection gets per loop turn (serverTurnBudgetMillis)
TURN_BUDGET: Final = 0.005
SLOW_TURN: Final = 0.1  # handling that held the loop longer than this is logged
# Pieces (headers and bodies) gathered before they leave early, mid-iteration: a window of 256 pipelined
# sends (or the answers to one large received chunk) then reaches the peer in parts, so it starts
# working while the rest is still being encoded, instead of idling until the whole window is built.
EARLY_FLUSH_PIECES: Final = 64
_PERF_COUNTER: Final = time.perf_counter  # a static: no module attribute lookup per turn
_GET_RUNNING_LOOP: Final = asyncio.get_running_loop  # (likewise, per send and per invoke)
_PROTOCOL_ERRORS_LOG: Final = LogLimiter()  # peers choose how often this happens

Buffer: TypeAlias = bytes | bytearray | memoryview

RequestHandler = Callable[["Connection", RemotingCommand], None]
CloseCallback = Callable[["Connection"], None]


class Connection(asyncio.Protocol):
    """A remoting connection. Every pending request leaves `_pending` exactly once: on its answer, its
    timeout, the cancellation of its awaiting task or the close; whichever takes it settles its waiter."""

    def __init__(
        self,
        *,
        request_handler: RequestHandler | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        name: str = "connection",
        clock: Clock = SYSTEM_CLOCK,
        on_open: Callable[[Connection], None] | None = None,
        max_header_size: int | None = None,
        max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS,
        turn_budget: float = TURN_BUDGET,
        busy_poll: BusyPoll | None = None,
        before_write: Callable[[], None] | None = None,
        after_turn: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self._turn_budget = turn_budget
        self._on_open = on_open
        self.remote_address = ""
        self.local_address = ""
        self.closed = False
        self.close_reason: str | None = None
        # Free for processors: e.g. the broker keeps the client id and groups of this channel here.
        self.state: dict[str, object] = {}
        self._request_handler = request_handler
        self._decoder = FrameDecoder(max_frame_size, max_header_size or max_frame_size)
        self._max_ext_fields = max_ext_fields
        # Requests of this connection whose processor is still running (counted by the dispatcher).
        self.inflight = 0
        # Commands left for the next loop turn once this connection used its TURN_BUDGET.
        self._backlog: list[RemotingCommand] | None = None
        self._clock = clock
        self.last_activity = clock.monotonic()
        self._transport: asyncio.Transport | None = None
        # opaque -> (future, deadline on the loop's clock, timeout, request code). One sweep timer, armed
        # at the earliest deadline, expires them (not one timer per request).
        self._pending: Pending = {}
        self._sweep_handle: asyncio.TimerHandle | None = None
        self._sweep_at = 0.0
        self._close_callbacks: list[CloseCallback] = []
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._out: list[Buffer] = []
        self._receiving = False
        self._answered = False  # the first answer to the chunk being handled has left
        self._flush_handle: asyncio.Handle | None = None
        # A command left at once since this connection last read or flushed: the next one gathers.
        self._sent_early = False
        self._lost: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of connection_made
        # Armed after each write: the loop polls instead of sleeping while an answer is likely to come.
        self._busy = busy_poll
        # The broker's store: `before_write` before any bytes leave (the records its answers acknowledge
        # are written then), `after_turn` at the end of each turn of received commands.
        self._before_write = before_write
        self._after_turn = after_turn
        # Commands in the turn being handled (a processor may batch its work when there are several).
        self.turn_size = 0

    # ---- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but they have the same methods.
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        self.remote_address = format_peer(transport.get_extra_info("peername"))
        self.local_address = format_peer(transport.get_extra_info("sockname"))
        self.last_activity = self._clock.monotonic()
        self._loop = _GET_RUNNING_LOOP()
        self._lost = self._loop.create_future()
        if self._on_open is not None:
            self._on_open(self)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_activity = self._clock.monotonic()
        self._sent_early = False  # a read starts a new turn for this connection (see send)
        busy = self._busy
        if busy is not None:
            busy.read()  # the wait since the last write is over: busy polling learns its length
        try:
            frames = self._decoder.feed(data)
            max_ext = self._max_ext_fields
            commands = [decode_command(frame, max_ext) for frame in frames]
        except RemoteProtocolError as exc:
            self._protocol_error(str(exc))
            return
        except Exception as exc:  # a header the decoder could not make sense of
            self._protocol_error(f"undecodable command: {exc!r}")
            return
        if self._backlog is not None:  # earlier commands wait for the next turn: keep the order
            self._backlog.extend(commands)
            return
        self._handle(commands)

    def _handle(self, commands: list[RemotingCommand]) -> None:
        # Answers produced while handling this chunk (processors run inline): the first at once, the
        # others in one writelines at its end, instead of one loop iteration later (see send).
        self._receiving = True
        self._answered = False
        self.turn_size = len(commands)
        # One connection gets about TURN_BUDGET of the loop per turn: a chunk packed with costly requests
        # must not make every other connection (the nameserver's, in `orbitmq serve`) wait behind it.
        started = _PERF_COUNTER()
        deadline = started + self._turn_budget if len(commands) > 1 else 0.0
        handled = 0
        try:
            for i, cmd in enumerate(commands):
                handled = i + 1
                if cmd.is_response:
                    self._complete(cmd)
                elif self._request_handler is not None:
                    self._request_handler(self, cmd)
                else:
                    log.debug(
                        "%s: request code %d from %s ignored (no handler)",
                        self.name,
                        cmd.code,
                        self.remote_address,
                    )
                transport = self._transport
                if transport is None:  # a handler closed us
                    return
                if deadline and i + 1 < len(commands) and _PERF_COUNTER() > deadline:
                    # The rest waits for the next turn; reading pauses meanwhile (no pile-up).
                    self._backlog = commands[i + 1 :]
                    with contextlib.suppress(NotImplementedError, RuntimeError):
                        transport.pause_reading()
                    _GET_RUNNING_LOOP().call_soon(self._handle_backlog)
                    return
        finally:
            self._receiving = False
            if self._out:
                if self._flush_handle is not None:
                    self._flush_handle.cancel()
                self._flush()
            after = self._after_turn
            if after is not None:
                try:
                    after()
                except Exception:  # the answers have left: say so, and keep serving this connection
                    log.exception("%s: the work after a turn failed", self.name)
            elapsed = _PERF_COUNTER() - started
            if elapsed > SLOW_TURN:  # everyone else on this loop waited that long: say who did it
                log.warning(
                    "%s: %d request(s) from %s held the loop for %.0f ms (codes %s)",
                    self.name,
                    handled,
                    self.remote_address,
                    elapsed * 1000,
                    sorted({c.code for c in commands[:handled]}),
                )

    def _handle_backlog(self) -> None:
        commands, self._backlog = self._backlog or [], None
        transport = self._transport
        if transport is None or self.closed:
            return
        with contextlib.suppress(NotImplementedError, RuntimeError):
            transport.resume_reading()
        self._handle(commands)

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self.close_reason is None:
            self.close_reason = f"connection lost: {exc!r}" if exc else "closed by peer"
        self.closed = True
        self._transport = None
        self._out = []
        # A closed connection may live on in reference cycles until the cyclic GC runs: drop a partial
        # frame now (a hostile peer leaves up to serverMaxFrameSize of it).
        self._decoder = FrameDecoder(0, 0)
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._sweep_handle is not None:
            self._sweep_handle.cancel()
            self._sweep_handle = None
        pending, self._pending = self._pending, {}
        for waiter, _, _, _ in pending.values():
            fail(waiter, ConnectError(f"connection to {self.remote_address} closed: {self.close_reason}"))
        self._wake_writers()
        callbacks, self._close_callbacks = self._close_callbacks, []
        for cb in callbacks:
            try:
                cb(self)
            except Exception:
                log.exception("%s: close callback failed", self.name)
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._wake_writers()

    # ---- public API -------------------------------------------------------------------------

    @property
    def writing_paused(self) -> bool:
        """True while the transport's write buffer is above its high-water mark (await drain())."""
        return self._writing_paused

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def add_close_callback(self, cb: CloseCallback) -> None:
        """Call `cb(conn)` once when the connection closes (at once if it is already closed)."""
        if self.closed:
            cb(self)
        else:
            self._close_callbacks.append(cb)

    async def drain(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark."""
        while self._writing_paused and not self.closed:
            waiter: asyncio.Future[None] = _GET_RUNNING_LOOP().create_future()
            self._drain_waiters.append(waiter)
            await waiter

    def send(self, cmd: RemotingCommand) -> None:
        """Write one command now (responses, oneway requests). Silently dropped if closed."""
        transport = self._transport
        if transport is None or self.closed:
            log.debug("%s: dropping command code %d to closed %s", self.name, cmd.code, self.remote_address)
            return
        if not self._receiving:  # (answers written while a received chunk is handled: set on receipt)
            self.last_activity = self._clock.monotonic()
        # The first command of a loop turn (or the first answer to a received chunk) leaves at once, so
        # the peer works on it while this side builds the rest; the rest of the turn gathers and leaves
        # in one writelines when it ends, or in parts of EARLY_FLUSH_PIECES: senders sharing a connection
        # pipeline instead of going in lock-step rounds. The turn's end is marked (a callback) only once a
        # second command gathers, so a lone sender's turn costs the loop no extra iteration.
        out = self._out
        out += encode_command(cmd)
        if self._receiving:
            leave = not self._answered or len(out) >= EARLY_FLUSH_PIECES
            self._answered = True
        elif self._flush_handle is not None:
            leave = len(out) >= EARLY_FLUSH_PIECES
        elif not self._sent_early:
            leave = self._sent_early = True
        else:
            leave = False
            loop = self._loop or _GET_RUNNING_LOOP()  # (asyncio's lookup costs a getpid() call)
            self._flush_handle = loop.call_soon(self._flush)  # ends this turn's batch
        if leave and not self._leave(transport, out):
            return
        busy = self._busy
        if busy is not None and self._loop is not None:
            busy.arm(self._loop)

    def send_all(self, cmds: list[RemotingCommand]) -> None:
        """Write `cmds` now, after what this turn gathered so far, in one writelines (a group commit's
        answers: the peer gets them all at once instead of the first alone and the rest at the turn's
        end). Silently dropped if closed."""
        transport = self._transport
        if transport is None or self.closed:
            log.debug("%s: dropping %d commands to closed %s", self.name, len(cmds), self.remote_address)
            return
        if not self._receiving:
            self.last_activity = self._clock.monotonic()
        out = self._out
        for cmd in cmds:
            out += encode_command(cmd)
        if not self._leave(transport, out):
            return
        busy = self._busy
        if busy is not None and self._loop is not None:
            busy.arm(self._loop)

    def _flush(self) -> None:
        self._flush_handle = None
        self._sent_early = False
        transport = self._transport
        if self._out and transport is not None:
            self._leave(transport, self._out)
        else:
            self._out = []

    def _leave(self, transport: asyncio.Transport, out: list[Buffer]) -> bool:
        """`out` (this connection's gathered pieces) leaves now, after `before_write`; False when that
        failed and the connection was aborted instead."""
        if self._before_write is not None and not self._barrier():
            return False
        self._out = []
        transport.writelines(out)
        return True

    def _barrier(self) -> bool:
        """Run `before_write`. If it fails, what this connection gathered never leaves: the connection
        is aborted (its peer times out and retries) instead of acknowledging what may not be stored."""
        hook = self._before_write
        if hook is not None:
            try:
                hook()
            except Exception as exc:
                log.exception(
                    "%s: the work before a write failed; closing %s", self.name, self.remote_address
                )
                self._out = []
                self.abort(f"could not complete the work before a write: {exc!r}")
                return False
        return True

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send `request` and wait up to `timeout` seconds for the response with its opaque."""
        loop = _GET_RUNNING_LOOP()
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        opaque = self._register(request, timeout, future, loop)
        try:
            if self._writing_paused:
                await self.drain()
            if self.closed:
                raise self._closed_error()
            self.send(request)
            return await future
        finally:
            # compare the futures: a compiled build boxes the entry tuple anew on each read
            current = self._pending.get(opaque)
            if current is not None and current[0] is future:
                del self._pending[opaque]

    def invoke_callback(self, request: RemotingCommand, timeout: float, callback: ResponseCallback) -> None:
        """`invoke` without a coroutine or a future (one send of a busy producer costs less):
        `callback(response, None)` or `callback(None, error)` runs exactly once, on the loop, when the
        response arrives, `timeout` passes or the connection closes. It ignores flow control: callers
        check `writing_paused` first and use `invoke` (which drains) when it is set."""
        self._register(request, timeout, callback, self._loop or _GET_RUNNING_LOOP())
        self.send(request)

    def _register(
        self, request: RemotingCommand, timeout: float, waiter: Waiter, loop: asyncio.AbstractEventLoop
    ) -> int:
        """Enter `request` (a fresh opaque if its own is taken) in the pending table; its opaque."""
        if self.closed:
            raise self._closed_error()
        if request.opaque in self._pending:
            request.opaque = next_opaque()
        opaque = request.opaque
        deadline = loop.time() + max(timeout, 0.0)
        self._pending[opaque] = (waiter, deadline, timeout, request.code)
        if self._sweep_handle is None or deadline < self._sweep_at:
            self._arm_sweep(loop, deadline)
        return opaque

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send `request` with the oneway flag; no response is expected."""
        if self.closed:
            raise self._closed_error()
        request.flag |= 2  # RPC_ONEWAY
        if self._writing_paused:
            await self.drain()
        self.send(request)

    def close(self, reason: str) -> None:
        """Close the connection; pending requests fail with ConnectError carrying `reason`."""
        self._end(reason, graceful=True)

    def abort(self, reason: str) -> None:
        """Close without flushing the write buffer (broken peers)."""
        self._end(reason, graceful=False)

    def _end(self, reason: str, *, graceful: bool) -> None:
        if self.closed:
            return
        self.close_reason = reason
        transport = self._transport
        if transport is None:
            self.connection_lost(None)
            return
        if graceful:
            self._flush()  # what was sent before close() still goes out, then the FIN
        # From now on nothing more is written or read; pending requests fail in connection_lost.
        self.closed = True
        if graceful:
            transport.close()
        else:
            transport.abort()

    async def wait_closed(self) -> None:
        if self._lost is not None:
            await asyncio.shield(self._lost)

    def __repr__(self) -> str:
        state = f"closed ({self.close_reason})" if self.closed else "open"
        return f"<Connection {self.name} {self.local_address}->{self.remote_address} {state}>"

    # ---- internals --------------------------------------------------------------------------

    def _closed_error(self) -> ConnectError:
        return ConnectError(f"connection to {self.remote_address} is closed: {self.close_reason}")

    def _complete(self, response: RemotingCommand) -> None:
        entry = self._pending.pop(response.opaque, None)
        if entry is None:
            log.debug(
                "%s: response opaque %d from %s matches no pending request (timed out?)",
                self.name,
                response.opaque,
                self.remote_address,
            )
            return
        answer(entry[0], response)

    def _arm_sweep(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._sweep_handle is not None:
            self._sweep_handle.cancel()
        self._sweep_handle = loop.call_at(when, self._sweep)
        self._sweep_at = when

    def _sweep(self) -> None:
        """Fail the requests whose deadline passed; re-arm at the earliest remaining deadline."""
        self._sweep_handle = None
        loop = _GET_RUNNING_LOOP()
        # call_at may run a timer up to the loop's clock resolution early: count that as due.
        earliest = expire(self._pending, loop.time() + 0.001, self.remote_address)
        if earliest is not None and not self.closed:
            self._arm_sweep(loop, earliest)

    def _protocol_error(self, reason: str) -> None:
        if _PROTOCOL_ERRORS_LOG.allow():
            suppressed = _PROTOCOL_ERRORS_LOG.take_suppressed()
            log.warning(
                "%s: closing connection from %s: %s%s", self.name, self.remote_address, reason, suppressed
            )
        self.abort(f"protocol error: {reason}")

    def _wake_writers(self) -> None:
        # On close writers wake too: their next send() is dropped and invoke() raises ConnectError.
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
