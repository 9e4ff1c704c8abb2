"""Request dispatch: code -> processor, with RocketMQ's error answers, shared by server and client.

Processors run inline, without an asyncio Task per request (creating and completing one costs more
than many processors), and every route counts its answers and latencies for the metrics endpoint.
This module must not know what any request code means.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, cast

from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection
from orbitmq.transport.log_limit import LogLimiter

log: Final = logging.getLogger("orbitmq.transport")

# What a processor returns: its answer at once, or an awaitable of it (None: nothing to send now).
ProcessorResult: TypeAlias = "RemotingCommand | Later | Awaitable[RemotingCommand | None]"
Processor = Callable[[Connection, RemotingCommand], ProcessorResult]

OVERLOAD_REMARK: Final = "[OVERLOAD]system busy, start flow control for a while"


def not_supported_remark(code: int) -> str:
    return f" request type {code} not supported"


def exception_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# Upper bounds (seconds) of the latency buckets; the last bucket counts everything slower.
LATENCY_BOUNDS: Final[tuple[float, ...]] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
)  # fmt: skip


# Per-request calls kept as Final statics (compiled: no lookup in the module dict per request).
perf_counter: Final = time.perf_counter
_bisect_left: Final = bisect.bisect_left


def _zero_buckets() -> list[int]:
    return [0] * (len(LATENCY_BOUNDS) + 1)


@dataclass(slots=True)
class RouteStats:
    """What one request code's route has seen (read by metrics; mutated only on the loop)."""

    responses: dict[int, int] = field(default_factory=dict)  # response code -> count
    latency_buckets: list[int] = field(default_factory=_zero_buckets)
    latency_sum: float = 0.0

    def observe(self, started: float, response: RemotingCommand | None, finished: float = 0.0) -> None:
        """Count one handled request: `finished` (perf_counter) when the handling ended, if it was read
        before the answer was written (the answer first, the counting after it), else now."""
        elapsed = (finished or perf_counter()) - started
        self.latency_buckets[_bisect_left(LATENCY_BOUNDS, elapsed)] += 1
        self.latency_sum += elapsed
        if response is not None:
            code = response.code
            self.responses[code] = self.responses.get(code, 0) + 1


@dataclass(slots=True)
class _Route:
    processor: Processor
    limit: int
    pending: int = 0
    stats: RouteStats = field(default_factory=RouteStats)


class Later:
    """An answer that is not known yet and that no coroutine waits for: a processor returns a fresh
    `Later` and keeps it; the dispatcher binds it to the request, and its owner calls `answer()` exactly
    once, on the loop (later calls do nothing). Counts as in flight on its connection until answered."""

    __slots__ = ("_conn", "_dispatcher", "_request", "_route", "_started")

    def __init__(self) -> None:
        self._dispatcher: Dispatcher | None = None
        self._route: _Route | None = None
        self._conn: Connection | None = None
        self._request: RemotingCommand | None = None
        self._started = 0.0

    def answer(self, response: RemotingCommand | None) -> None:
        dispatcher = self._dispatcher
        route = self._route
        conn = self._conn
        request = self._request
        if dispatcher is None or route is None or conn is None or request is None:
            return  # answered already (or never bound)
        self._dispatcher = None
        self._conn = None
        self._request = None
        route.pending -= 1
        conn.inflight -= 1
        finished = perf_counter()
        dispatcher._answer(conn, request, response)  # (the answer first: the peer works on it meanwhile)
        route.stats.observe(self._started, response, finished)


def answer_together(answers: list[tuple[Later, RemotingCommand]]) -> None:
    """Answer several `Later`s at once (a group commit's round): first every answer, each connection's
    in one write, then the counting, so no sender waits while the others' answers are counted (one
    after another, with `Later.answer`, the last answer would leave only after every other was built
    and counted). An answer that cannot go out plainly (a oneway request, a closed or paused
    connection) takes `Later.answer`'s way."""
    finished = perf_counter()
    sent: list[tuple[_Route, Connection, RemotingCommand, float]] = []
    batches: dict[Connection, list[RemotingCommand]] = {}
    for later, response in answers:
        route = later._route
        conn = later._conn
        request = later._request
        if later._dispatcher is None or route is None or conn is None or request is None:
            continue  # answered already (or never bound)
        if request.is_oneway or conn.closed or conn.writing_paused:
            later.answer(response)
            continue
        later._dispatcher = None  # (answered: a second answer does nothing)
        later._conn = None
        later._request = None
        response.response_to(request)
        batch = batches.get(conn)
        if batch is None:
            batch = batches[conn] = []
        batch.append(response)
        sent.append((route, conn, response, later._started))
    for conn, batch in batches.items():
        conn.send_all(batch)
    for route, conn, response, started in sent:
        route.pending -= 1
        conn.inflight -= 1
        route.stats.observe(started, response, finished)


# Types whose instances are known coroutines (compiled and interpreted `async def` results).
_coroutine_types: Final[set[type]] = set()


class Dispatcher:
    """Routes inbound requests of many connections to processors; owns the tasks it starts.

    Rules (NettyRemotingAbstract.processRequestCommand, fact sheet 1.7):
    - unknown code -> REQUEST_CODE_NOT_SUPPORTED (3), remark " request type <code> not supported";
    - more pending requests for a code than its limit -> SYSTEM_BUSY (2), remark
      "[OVERLOAD]system busy, start flow control for a while";
    - the processor raises -> SYSTEM_ERROR (1) with the exception text;
    - a processor returning None sends nothing (it answers later itself, e.g. long polling);
    - oneway requests never get any answer, not even an error.
    Every answer is made with `response_to(request)`, so it carries the request's opaque and serialize type.

    A processor's coroutine is started right in the connection's receive callback; one that finishes
    without suspending is answered at once, and only one that suspends (a SYNC_FLUSH wait, drain)
    continues in a Task. A processor may also be a plain function returning its answer (no coroutine),
    or return a `Later` when someone else owns its wait and answers it (the group commit answers every
    send one fdatasync covered in one loop callback). Per route it counts answers by response code and
    times each request into fixed latency buckets (`route_stats()`, read at scrape time).
    """

    def __init__(
        self, *, name: str, max_pending_per_code: int = 10000, max_inflight_per_connection: int = 1 << 30
    ) -> None:
        self.name = name
        self.max_pending_per_code = max_pending_per_code
        self.max_inflight_per_connection = max_inflight_per_connection
        self._routes: dict[int, _Route] = {}
        self._default: _Route | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        # (code, client) pairs already logged at INFO for an unsupported request; bounded so a client
        # cycling through codes cannot grow it without limit (later ones are logged at DEBUG only).
        self._unsupported_logged: set[tuple[int, str]] = set()
        self.unsupported_log_limit = 4096
        self._failures_log = LogLimiter()

    def register(self, code: int, processor: Processor, *, limit: int | None = None) -> None:
        self._routes[int(code)] = _Route(processor, self.max_pending_per_code if limit is None else limit)

    def register_default(self, processor: Processor, *, limit: int | None = None) -> None:
        self._default = _Route(processor, self.max_pending_per_code if limit is None else limit)

    def pending(self, code: int) -> int:
        route = self._routes.get(code)
        return route.pending if route is not None else 0

    def route_stats(self) -> dict[int, RouteStats]:
        """Request code -> its counters (-1: the default route)."""
        table = {code: route.stats for code, route in self._routes.items()}
        if self._default is not None:
            table[-1] = self._default.stats
        return table

    def handle(self, conn: Connection, request: RemotingCommand) -> None:
        """Connection callback: answer errors at once, run processors inline (a Task only if they wait)."""
        route = self._routes.get(request.code, self._default)
        if route is None:
            self._log_unsupported(conn, request.code)
            if not request.is_oneway:
                answer = RemotingCommand.response(
                    ResponseCode.REQUEST_CODE_NOT_SUPPORTED, not_supported_remark(request.code)
                )
                conn.send(answer.response_to(request))
            return
        if route.pending >= route.limit or conn.inflight >= self.max_inflight_per_connection:
            if not request.is_oneway:
                busy = RemotingCommand.response(ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
                conn.send(busy.response_to(request))
            return
        route.pending += 1
        started = perf_counter()
        try:
            awaitable = route.processor(conn, request)
            if isinstance(awaitable, RemotingCommand):  # answered without waiting for anything
                response: RemotingCommand | None = awaitable
                coro = None
            elif isinstance(awaitable, Later):  # its owner answers it
                later: Later = awaitable
                later._dispatcher = self
                later._route = route
                later._conn = conn
                later._request = request
                later._started = started
                conn.inflight += 1
                return
            else:
                kind = type(awaitable)
                if kind not in _coroutine_types:  # an ABC isinstance per request costs more than this
                    if not isinstance(awaitable, Coroutine):
                        self._start_task(self._run(route, conn, request, awaitable, started))
                        return
                    if len(_coroutine_types) < 64:
                        _coroutine_types.add(kind)
                coro = cast(Coroutine[Any, Any, RemotingCommand | None], awaitable)
                yielded = coro.send(None)
                response = None
        except StopIteration as stop:
            response = stop.value
            coro = None
        except Exception as exc:
            response = self._failure(request, exc)
            coro = None
        except BaseException:
            route.pending -= 1
            raise
        if coro is None:  # finished: answer now
            route.pending -= 1
            finished = perf_counter()
            self._answer(conn, request, response)  # (the answer first: the peer works on it meanwhile)
            route.stats.observe(started, response, finished)
            return
        # The processor is waiting for something: the rest of it runs in a Task.
        conn.inflight += 1
        self._start_task(self._run(route, conn, request, _resume(coro, yielded), started, counted=True))

    def _log_unsupported(self, conn: Connection, code: int) -> None:
        """INFO once per (code, client) -- a client speaking a dialect we lack should be visible in the
        log without one line per request; the client is its heartbeat client id, else its address."""
        client = str(conn.state.get("client_id") or conn.remote_address)
        key = (code, client)
        first = key not in self._unsupported_logged
        if first and len(self._unsupported_logged) < self.unsupported_log_limit:
            self._unsupported_logged.add(key)
            log.info(
                "%s: request code %d is not supported; answered REQUEST_CODE_NOT_SUPPORTED to %s "
                "(logged once per code and client)",
                self.name,
                code,
                client,
            )
        else:
            log.debug("%s: request code %d not supported (from %s)", self.name, code, client)

    def _start_task(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _failure(self, request: RemotingCommand, exc: Exception) -> RemotingCommand:
        if self._failures_log.allow():  # a client decides how often this happens
            log.warning(
                "%s: processor for code %d failed: %s%s",
                self.name,
                request.code,
                exception_text(exc),
                self._failures_log.take_suppressed(),
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
        return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, exception_text(exc))

    def _answer(self, conn: Connection, request: RemotingCommand, response: RemotingCommand | None) -> None:
        if response is None or request.is_oneway or conn.closed:
            return
        response.response_to(request)
        if conn.writing_paused:
            self._start_task(self._send_after_drain(conn, response))
            return
        conn.send(response)

    @staticmethod
    async def _send_after_drain(conn: Connection, response: RemotingCommand) -> None:
        await conn.drain()
        conn.send(response)

    async def _run(
        self,
        route: _Route,
        conn: Connection,
        request: RemotingCommand,
        awaitable: Awaitable[RemotingCommand | None],
        started: float,
        *,
        counted: bool = False,
    ) -> None:
        try:
            response = await awaitable
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            response = self._failure(request, exc)
        finally:
            route.pending -= 1
            if counted:
                conn.inflight -= 1
        route.stats.observe(started, response)
        if response is None or request.is_oneway or conn.closed:
            return
        response.response_to(request)
        if conn.writing_paused:
            await conn.drain()
        conn.send(response)

    async def stop(self) -> None:
        """Cancel every running processor task and wait for them."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


@types.coroutine
def _resume(
    coro: Coroutine[Any, Any, RemotingCommand | None], yielded: Any
) -> Generator[Any, Any, RemotingCommand | None]:
    """Continue a coroutine that was started by hand and suspended yielding `yielded`.

    Awaited by a Task, this passes what the coroutine yields up to the Task (the future it waits for)
    and what the Task sends or throws (results, CancelledError) down, as `await` itself would.
    """
    value = yielded
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                value = coro.throw(exc)
            except StopIteration as stop:
                result: RemotingCommand | None = stop.value
                return result
        else:
            try:
                value = coro.send(sent)
            except StopIteration as stop:
                result = stop.value
                return result
