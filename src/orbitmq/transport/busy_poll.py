"""Busy polling: a loop that wrote keeps polling for a short window instead of going to sleep, and
learns from each wait how long that window should be.

Why: a loop that sleeps lets its CPU halt, and waking a halted CPU (an inter-processor interrupt; on a
virtual machine without guest halt polling, a VM exit and entry) can cost more than a loopback round
trip's own work. Polling costs less CPU per answer than the halt and the wake-up it replaces.

`BusyPoll.arm()` after a write keeps the loop busy for the current window (a callback that schedules
itself again, so the loop polls its sockets with a zero timeout on every turn). The window adapts as
KVM's halt polling does: `read()` ends the wait the first write since the last read began; data that
came while polling keeps the window; data that came after polling stopped but within `limit` doubles it
(from `GROW_START`); data later than `limit` halves it, to 0 below `GROW_START`. So polling costs at
most one window per write, and nothing once answers come later than `limit` (a distant broker).

Polling only pays while a CPU would otherwise sit idle; where the CPUs are busy it takes them from the
processes that should answer. So the polling thread reads its own run-queue wait (Linux's
/proc/thread-self/schedstat, every `CHECK_INTERVAL`) and does not poll while that wait is over
`CONTENDED_SHARE` of the interval, looking again after `BACKOFF` (`CpuWatch`).

The client polls by default (`ClientConfig.busy_poll_us`); the broker only when
`serverBusyPollMicros` sets a limit, since a server's cores are its operator's to spend. 0: off.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

_PERF_COUNTER: Final = time.perf_counter
# The first non-zero window, in seconds (KVM's halt_poll_ns_grow_start: 10 µs).
GROW_START: Final = 10e-6
# A thread that waited for a CPU longer than this share of the last interval does not poll.
CONTENDED_SHARE: Final = 0.05
# Seconds between two looks at the run-queue wait while polling is allowed, and after one that found the
# CPUs contended (longer: a poll that makes contention is tried again only now and then).
CHECK_INTERVAL: Final = 0.05
BACKOFF: Final = 0.5


def thread_run_queue_wait() -> float | None:
    """Seconds the calling thread has spent runnable but waiting for a CPU (Linux schedstat); None where
    the kernel does not say."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class CpuWatch:
    """Whether the CPUs of the thread that calls `check` are busy: its run-queue wait over the last
    interval, read at most every CHECK_INTERVAL (BACKOFF after a contended one). One per polling thread."""

    __slots__ = ("_at", "_next", "_reader", "_wait", "contended")

    def __init__(self, reader: Callable[[], float | None] = thread_run_queue_wait) -> None:
        self._reader = reader
        self._at = 0.0
        self._wait = -1.0  # the last reading; -1: none yet
        self._next = 0.0
        self.contended = False

    def check(self, now: float) -> bool:
        """Whether to refrain from polling at `now` (seconds, the caller's perf_counter clock)."""
        if now < self._next:
            return self.contended
        wait = self._reader()
        if wait is None:  # not Linux, or no schedstat: polling is decided by the window alone
            self._next = float("inf")
            return False
        if self._wait >= 0.0 and now > self._at:
            self.contended = (wait - self._wait) > CONTENDED_SHARE * (now - self._at)
        self._wait = wait
        self._at = now
        self._next = now + (BACKOFF if self.contended else CHECK_INTERVAL)
        return self.contended


class BusyPoll:
    """One per server or client (they run on one loop): `arm(loop)` after each write, `read()` when
    data arrives."""

    __slots__ = ("_clock", "_cpu", "_deadline", "_loop", "_scheduled", "_waiting_since", "limit", "window")

    def __init__(
        self, limit: float, *, clock: Callable[[], float] = _PERF_COUNTER, cpu: CpuWatch | None = None
    ) -> None:
        if not limit >= 0:  # (also refuses NaN)
            raise ValueError(f"busy poll window must be at least 0 s, not {limit}")
        self.limit = limit
        self.window = min(GROW_START, limit)  # grows from here once answers are seen to come in time
        self._clock = clock
        self._cpu = cpu if cpu is not None else CpuWatch()  # (arm() runs on the loop's thread)
        self._deadline = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = False
        self._waiting_since = 0.0  # when the first write since the last read was armed; 0: no wait

    @property
    def polling(self) -> bool:
        """Whether the loop is being kept busy now."""
        return self._scheduled

    def arm(self, loop: asyncio.AbstractEventLoop) -> None:
        """A write: keep `loop` polling for the window from now (and start timing the wait)."""
        now = self._clock()
        if self._waiting_since == 0.0:
            self._waiting_since = now
        window = self.window
        # (not polling now: no window, or busy CPUs; the wait is still timed, so the window adapts)
        if window <= 0.0 or self._cpu.check(now):
            return
        self._deadline = now + window
        if not self._scheduled or loop is not self._loop:  # (a loop that stopped left its tick behind)
            self._scheduled = True
            self._loop = loop
            loop.call_soon(self._tick, loop)

    def read(self) -> None:
        """Data arrived: the wait begun by the first write since the last read is over; adapt the
        window to it (see the module docstring)."""
        since = self._waiting_since
        if since == 0.0:
            return
        self._waiting_since = 0.0
        if self._scheduled:  # answered while polling: the window did its job
            return
        self.window = next_window(self.window, self._clock() - since, self.limit)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:
            return  # a tick of a loop this poll has left
        if self._clock() < self._deadline:
            loop.call_soon(self._tick, loop)  # a ready callback: the next turn polls with a zero timeout
        else:
            self._scheduled = False


def next_window(window: float, waited: float, limit: float) -> float:
    """The window after a wait of `waited` seconds that polling did not catch (the window passed, or
    was 0, before the data came): doubled (from GROW_START, up to `limit`) when the data came within
    `limit`, else halved (to 0 below GROW_START)."""
    if waited <= limit:
        return min(max(window * 2.0, GROW_START), limit)
    window *= 0.5
    return window if window >= GROW_START else 0.0


def busy_poll(micros: float) -> BusyPoll | None:
    """The BusyPoll with a window of at most `micros` µs, or None for 0 (off)."""
    if not micros >= 0:  # (also refuses NaN)
        raise ValueError(f"busy polling must be at least 0 µs, not {micros}")
    if micros == 0:
        return None
    return BusyPoll(micros / 1e6)
