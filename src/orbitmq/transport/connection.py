"""One remoting connection over TCP: framing, opaque -> future correlation, oneway, timeouts, close.

`Connection` is an `asyncio.Protocol` (not streams: bytes go from the socket into the `FrameDecoder`
with no extra buffering layer). It is symmetrical: both sides can send requests and both receive
them; inbound requests are handed to a `request_handler` (the server's or client's dispatcher).

Invariants:
- every pending request is in `_pending` until exactly one of: its response arrives, its timeout
  fires, the awaiting task is cancelled, or the connection closes; each path removes the entry. A
  request sent with `invoke_callback` (no future, no coroutine: the producer's hot path) gets its
  callback called exactly once, by whichever of those paths removes its entry.
- a frame or header that breaks the protocol closes this connection only (the reason is logged).
- writes go out with `writelines(encode_command(cmd))` so bodies are never copied here; when the
  transport asks us to pause, `drain()` blocks writers until it resumes (flow control).

This module must not know request codes or what processors do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Final, TypeAlias, cast

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import ConnectError, RemoteProtocolError, RequestTimeoutError
from orbitmq.protocol.command import (
    DEFAULT_MAX_EXT_FIELDS,
    RemotingCommand,
    decode_command,
    encode_command,
    next_opaque,
)
from orbitmq.protocol.frames import DEFAULT_MAX_FRAME_SIZE, FrameDecoder
from orbitmq.transport.busy_poll import BusyPoll
from orbitmq.transport.log_limit import LogLimiter

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
# invoke_callback's callback: (response, None) or (None, error), called once on the loop.
ResponseCallback = Callable[[RemotingCommand | None, Exception | None], None]
# What waits for a response: invoke's future or invoke_callback's callback.
Waiter: TypeAlias = "asyncio.Future[RemotingCommand] | ResponseCallback"


def split_address(address: str) -> tuple[str, int]:
    """'ip:port' -> (ip, port); the port is after the last colon (IPv6 hosts keep their colons)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"bad address {address!r}, expected ip:port")
    return host.strip("[]"), int(port)


def _format_peer(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)


class Connection(asyncio.Protocol):
    """A remoting connection; see the module docstring for its invariants."""

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
        self._pending: dict[int, tuple[Waiter, float, float, int]] = {}
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
        self.remote_address = _format_peer(transport.get_extra_info("peername"))
        self.local_address = _format_peer(transport.get_extra_info("sockname"))
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
            _fail(waiter, ConnectError(f"connection to {self.remote_address} closed: {self.close_reason}"))
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
        # the peer works on it on the other core while this side builds the rest; the rest of the turn
        # (of the chunk) gathers and leaves in one writelines (one writev on uvloop) when it ends, or in
        # parts of EARLY_FLUSH_PIECES. With a few senders sharing a connection this turns lock-step
        # rounds (all answers, then all next requests) into a pipeline: W1 with 4 senders ~2x msgs/s.
        # The turn's end is marked (a callback) only once a second command gathers: a turn with one
        # command, a lone sender's, then costs the loop no extra iteration. Without a read in between,
        # "since the last read or flush" may span turns: a command then gathers until the turn ends.
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
        if leave:
            if self._before_write is not None and not self._barrier():
                return
            self._out = []
            transport.writelines(out)
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
        if self._before_write is not None and not self._barrier():
            return
        self._out = []
        transport.writelines(out)
        busy = self._busy
        if busy is not None and self._loop is not None:
            busy.arm(self._loop)

    def _flush(self) -> None:
        self._flush_handle = None
        self._sent_early = False
        transport = self._transport
        if self._out and transport is not None:
            if self._before_write is not None and not self._barrier():
                return
            out, self._out = self._out, []
            transport.writelines(out)
        else:
            self._out = []

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
        if self.closed:
            raise ConnectError(f"connection to {self.remote_address} is closed: {self.close_reason}")
        if request.opaque in self._pending:
            request.opaque = next_opaque()
        loop = _GET_RUNNING_LOOP()
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        opaque = request.opaque
        deadline = loop.time() + max(timeout, 0.0)
        entry = (future, deadline, timeout, request.code)
        self._pending[opaque] = entry
        if self._sweep_handle is None or deadline < self._sweep_at:
            self._arm_sweep(loop, deadline)
        try:
            if self._writing_paused:
                await self.drain()
            if self.closed:
                raise ConnectError(f"connection to {self.remote_address} is closed: {self.close_reason}")
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
        if self.closed:
            raise ConnectError(f"connection to {self.remote_address} is closed: {self.close_reason}")
        if request.opaque in self._pending:
            request.opaque = next_opaque()
        loop = self._loop or _GET_RUNNING_LOOP()  # (asyncio's lookup costs a getpid() call)
        deadline = loop.time() + max(timeout, 0.0)
        self._pending[request.opaque] = (callback, deadline, timeout, request.code)
        if self._sweep_handle is None or deadline < self._sweep_at:
            self._arm_sweep(loop, deadline)
        self.send(request)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send `request` with the oneway flag; no response is expected."""
        if self.closed:
            raise ConnectError(f"connection to {self.remote_address} is closed: {self.close_reason}")
        request.flag |= 2  # RPC_ONEWAY
        if self._writing_paused:
            await self.drain()
        self.send(request)

    def close(self, reason: str) -> None:
        """Close the connection; pending requests fail with ConnectError carrying `reason`."""
        if self.closed:
            return
        self.close_reason = reason
        transport = self._transport
        if transport is not None:
            self._flush()  # what was sent before close() still goes out, then the FIN
            # From now on nothing more is written or read; pending requests fail in connection_lost.
            self.closed = True
            transport.close()
        else:
            self.connection_lost(None)

    def abort(self, reason: str) -> None:
        """Close without flushing the write buffer (broken peers)."""
        if self.closed:
            return
        self.close_reason = reason
        transport = self._transport
        if transport is not None:
            self.closed = True
            transport.abort()
        else:
            self.connection_lost(None)

    async def wait_closed(self) -> None:
        if self._lost is not None:
            await asyncio.shield(self._lost)

    def __repr__(self) -> str:
        state = f"closed ({self.close_reason})" if self.closed else "open"
        return f"<Connection {self.name} {self.local_address}->{self.remote_address} {state}>"

    # ---- internals --------------------------------------------------------------------------

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
        waiter = entry[0]
        if isinstance(waiter, asyncio.Future):
            if not waiter.done():
                waiter.set_result(response)
        else:
            _call_back(waiter, response, None)

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
        now = loop.time() + 0.001
        earliest = None
        expired = []
        for opaque, (_, deadline, _, _) in self._pending.items():
            if deadline <= now:
                expired.append(opaque)
            elif earliest is None or deadline < earliest:
                earliest = deadline
        for opaque in expired:
            waiter, _, timeout, code = self._pending.pop(opaque)
            _fail(
                waiter,
                RequestTimeoutError(
                    f"request code {code} opaque {opaque} to {self.remote_address} timed out after {timeout}s"
                ),
            )
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


def _fail(waiter: Waiter, error: Exception) -> None:
    if isinstance(waiter, asyncio.Future):
        if not waiter.done():
            waiter.set_exception(error)
    else:
        _call_back(waiter, None, error)


def _call_back(callback: ResponseCallback, response: RemotingCommand | None, error: Exception | None) -> None:
    # The callback runs inside data_received, the sweep timer or connection_lost: its failure must not
    # break the connection or the other pending requests.
    try:
        callback(response, error)
    except Exception:
        log.exception("response callback failed")
