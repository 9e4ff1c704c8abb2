"""PullRequestHoldService bookkeeping: wake on arrival past the offset with a matching tag, or on timeout."""

from __future__ import annotations

import asyncio
import contextlib

from orbitmq.broker.client_registry import parse_subscription
from orbitmq.broker.long_polling import HeldPull, PullRequestHoldService
from orbitmq.common.clock import FakeClock
from orbitmq.message.hashing import java_string_hash


def make(clock: FakeClock, woken: list[HeldPull], max_offset: int = 0) -> PullRequestHoldService:
    return PullRequestHoldService(woken.append, lambda topic, qid: max_offset, clock=clock)


def held(clock: FakeClock, offset: int, timeout: float, expr: str = "*") -> HeldPull:
    sub = parse_subscription("T", expr, "TAG", 0, java_string_hash)
    return HeldPull(None, None, "T", 0, offset, clock.monotonic() + timeout, sub)


def test_arrival_wakes_only_matching_pulls() -> None:
    clock = FakeClock()
    woken: list[HeldPull] = []
    service = make(clock, woken)
    a = held(clock, 5, 15, "TagA")
    b = held(clock, 5, 15, "TagB")
    c = held(clock, 9, 15)
    for h in (a, b, c):
        service.hold(h)
    service.notify_message_arriving("T", 0, 6, java_string_hash("TagA"))
    assert woken == [a]
    assert service.held_count == 2
    service.notify_message_arriving("T", 1, 100, None)  # another queue: nobody
    assert woken == [a]


def test_timeout_and_periodic_check_and_stop() -> None:
    clock = FakeClock()
    woken: list[HeldPull] = []
    service = make(clock, woken, max_offset=3)
    short = held(clock, 3, 1)
    long = held(clock, 3, 20)
    service.hold(short)
    service.hold(long)
    service.check_all()
    assert woken == []
    clock.advance(1.5)
    service.check_all()
    assert woken == [short]
    service.stop()
    assert woken == [short, long]
    late = held(clock, 3, 20)
    service.hold(late)  # after stop: answered at once
    assert woken[-1] is late


class _Conn:
    def __init__(self, closed: bool) -> None:
        self.closed = closed


def test_pulls_of_closed_connections_are_forgotten_at_the_next_check() -> None:
    clock = FakeClock()
    woken: list[HeldPull] = []
    service = make(clock, woken)
    sub = parse_subscription("T", "*", "TAG", 0, java_string_hash)
    gone = HeldPull(_Conn(True), None, "T", 0, 3, clock.monotonic() + 30, sub)
    alive = HeldPull(_Conn(False), None, "T", 0, 3, clock.monotonic() + 30, sub)
    service.hold(gone)
    service.hold(alive)
    assert service.held_count == 2
    service.check_all()
    assert service.held_count == 1 and woken == []
    clock.advance(31)
    service.check_all()
    assert woken == [alive]


async def test_a_hold_wakes_the_service_only_for_an_earlier_deadline() -> None:
    """Holds with the usual equal suspend timeouts must not make the service rescan the table."""
    clock = FakeClock()
    woken: list[HeldPull] = []
    service = PullRequestHoldService(woken.append, lambda topic, qid: 0, check_interval=60.0, clock=clock)
    service.hold(held(clock, 0, 30))
    task = asyncio.get_running_loop().create_task(service.run())
    await asyncio.sleep(0)  # the loop arms at the earliest deadline (30 s)
    assert not service._changed.is_set()
    service.hold(held(clock, 0, 40))  # later: no wake
    assert not service._changed.is_set()
    service.hold(held(clock, 0, 1))  # earlier: the loop must re-arm
    assert service._changed.is_set()
    service.stop()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert len(woken) == 3  # stop answers every held pull
