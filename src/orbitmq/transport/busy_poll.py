"""Busy polling: a loop that wrote keeps polling for a short window instead of going to sleep.

Why: a loop that sleeps in epoll_wait lets its CPU halt. On a virtual machine without guest halt
polling (cpuidle-haltpoll off, as on this project's 2-core VM: guest_halt_poll_ns = 0), each halt is a
VM exit, and waking the CPU again costs the waker an IPI through the hypervisor and the sleeper a VM
entry. A loopback request-response between two processes that do nothing else costs 60-66 µs here,
nearly all of it kernel time; the same exchange with one side polling instead of sleeping costs 33-47.
In a one-sender round trip that is more than either side's own work.

`BusyPoll.arm()` after a write keeps the loop busy for `window` seconds: a callback that schedules
itself again (`call_soon`) makes the loop poll its sockets with a zero timeout on every turn, so an
answer (or the next request) that arrives within the window is read by a running CPU. The cost is the
CPU of the polling itself, at most `window` per write when nothing comes back in time; under load the
loop never idles and nothing is spent.

Off by default: it trades CPU for latency, which only the operator can choose. The broker's key is
`serverBusyPollMicros` (broker.conf), a client's `ClientConfig.busy_poll_us`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

_PERF_COUNTER: Final = time.perf_counter


class BusyPoll:
    """One per server or client (they run on one loop): `arm(loop)` after each write."""

    __slots__ = ("_deadline", "_loop", "_scheduled", "window")

    def __init__(self, window: float) -> None:
        if not window >= 0:  # (also refuses NaN)
            raise ValueError(f"busy poll window must be at least 0 s, not {window}")
        self.window = window
        self._deadline = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = False

    @property
    def polling(self) -> bool:
        """Whether the loop is being kept busy now."""
        return self._scheduled

    def arm(self, loop: asyncio.AbstractEventLoop) -> None:
        """Keep `loop` polling until `window` seconds from now."""
        self._deadline = _PERF_COUNTER() + self.window
        if not self._scheduled or loop is not self._loop:  # (a loop that stopped left its tick behind)
            self._scheduled = True
            self._loop = loop
            loop.call_soon(self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self._loop:
            return  # a tick of a loop this poll has left
        if _PERF_COUNTER() < self._deadline:
            loop.call_soon(self._tick, loop)  # a ready callback: the next turn polls with a zero timeout
        else:
            self._scheduled = False


def busy_poll(micros: float) -> BusyPoll | None:
    """The BusyPoll for a window of `micros` µs, or None for 0 (off)."""
    if not micros >= 0:  # (also refuses NaN)
        raise ValueError(f"busy polling must be at least 0 µs, not {micros}")
    if micros == 0:
        return None
    return BusyPoll(micros / 1e6)
