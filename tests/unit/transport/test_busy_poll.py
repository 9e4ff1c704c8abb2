"""BusyPoll without sockets: a loop stand-in that only collects `call_soon` callbacks, and a clock the
tests move by hand where the window's adaptation is checked."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, cast

import pytest

from orbitmq.transport.busy_poll import (
    BACKOFF,
    CHECK_INTERVAL,
    GROW_START,
    BusyPoll,
    CpuWatch,
    busy_poll,
    next_window,
    thread_run_queue_wait,
)


class CallbackLoop:
    """Collects call_soon callbacks; `turn()` runs the ones scheduled before it, as a loop turn does."""

    def __init__(self) -> None:
        self.ready: list[Callable[[], object]] = []

    def call_soon(self, callback: Callable[..., object], *args: object) -> None:
        self.ready.append(lambda: callback(*args))

    def turn(self) -> int:
        batch, self.ready = self.ready, []
        for callback in batch:
            callback()
        return len(batch)


def test_zero_is_off_and_bad_windows_are_refused() -> None:
    assert busy_poll(0) is None
    poll = busy_poll(50)
    assert isinstance(poll, BusyPoll) and poll.limit == pytest.approx(50e-6)
    assert poll.window == pytest.approx(GROW_START)  # it starts small and grows when that pays
    assert BusyPoll(4e-6).window == pytest.approx(4e-6)  # never above the limit
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match="at least 0"):
            BusyPoll(bad)
        with pytest.raises(ValueError, match="at least 0 µs"):
            busy_poll(bad)


def test_an_armed_loop_gets_a_ready_callback_every_turn_until_the_window_ends() -> None:
    loop = CallbackLoop()
    poll = BusyPoll(0.02)
    poll.window = 0.02
    assert not poll.polling
    started = time.perf_counter()
    poll.arm(cast(Any, loop))
    assert poll.polling and len(loop.ready) == 1
    turns = 0
    while loop.turn():  # each turn re-schedules the tick: the loop would poll, not sleep
        turns += 1
        assert len(loop.ready) <= 1  # never more than one tick pending
    assert time.perf_counter() - started >= 0.02
    assert turns > 1 and not poll.polling


def test_arming_again_extends_the_window_without_a_second_callback() -> None:
    loop = CallbackLoop()
    poll = BusyPoll(0.01)
    poll.window = 0.01
    poll.arm(cast(Any, loop))
    first_end = time.perf_counter() + 0.01
    while time.perf_counter() < first_end - 0.005:
        loop.turn()
    poll.arm(cast(Any, loop))  # 5 ms before the first window ends: 10 ms more from now
    assert len(loop.ready) == 1
    while loop.turn():
        pass
    assert time.perf_counter() >= first_end + 0.004
    assert not poll.polling
    poll.arm(cast(Any, loop))  # and it starts again after it stopped
    assert poll.polling and len(loop.ready) == 1


def test_arming_on_another_loop_polls_there_even_if_the_first_one_stopped_mid_window() -> None:
    stopped, fresh = CallbackLoop(), CallbackLoop()
    poll = BusyPoll(10.0)
    poll.window = 10.0
    poll.arm(cast(Any, stopped))  # that loop never runs its tick again
    poll.arm(cast(Any, fresh))
    assert len(fresh.ready) == 1 and poll.polling
    stopped.turn()  # a late tick of the old loop schedules nothing
    assert stopped.ready == [] and len(fresh.ready) == 1


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def wait(poll: BusyPoll, loop: CallbackLoop, clock: Clock, seconds: float) -> None:
    """A write, then `seconds` until data comes: the loop turns (polls) while the window lasts, then it
    would sleep; the data is read at the end."""
    poll.arm(cast(Any, loop))
    end = clock.now + seconds
    while loop.ready and clock.now < end:
        clock.now = min(clock.now + 1e-6, end)
        loop.turn()
    clock.now = end
    poll.read()


def test_the_window_grows_while_data_comes_after_it_but_within_the_limit() -> None:
    loop, clock = CallbackLoop(), Clock()
    poll = BusyPoll(200e-6, clock=clock)
    seen = []
    for _ in range(6):
        wait(poll, loop, clock, 60e-6)
        seen.append(round(poll.window * 1e6))
    # doubled while polling stopped before the data came; then the data comes while polling: it stays
    assert seen == [20, 40, 80, 80, 80, 80]
    for _ in range(3):
        wait(poll, loop, clock, 190e-6)  # later answers: up to the limit and no further
    assert poll.window == pytest.approx(200e-6)


def test_the_window_halves_to_zero_while_data_comes_later_than_the_limit_and_grows_back() -> None:
    loop, clock = CallbackLoop(), Clock()
    poll = BusyPoll(200e-6, clock=clock)
    poll.window = 160e-6
    seen = []
    for _ in range(6):
        wait(poll, loop, clock, 5e-3)  # a held pull, a distant broker: polling cannot catch these
        seen.append(round(poll.window * 1e6))
    assert seen == [80, 40, 20, 10, 0, 0]
    poll.arm(cast(Any, loop))  # at 0 nothing polls, but the wait is still timed
    assert not poll.polling and loop.ready == []
    clock.now += 50e-6
    poll.read()
    assert poll.window == pytest.approx(GROW_START)


def test_the_wait_runs_from_the_first_write_since_the_last_read() -> None:
    loop, clock = CallbackLoop(), Clock()
    poll = BusyPoll(200e-6, clock=clock)
    poll.window = 0.0
    poll.arm(cast(Any, loop))
    clock.now += 150e-6
    poll.arm(cast(Any, loop))  # a second request; its answer comes 100 µs later, 250 after the first
    clock.now += 100e-6
    poll.read()
    assert poll.window == 0.0  # 250 µs: longer than the limit, so no growth
    poll.read()  # data with no write before it (a server's request to the client) changes nothing
    clock.now += 1.0
    poll.read()
    assert poll.window == 0.0


def test_next_window_doubles_within_the_limit_and_halves_beyond_it() -> None:
    assert next_window(0.0, 50e-6, 200e-6) == pytest.approx(GROW_START)
    assert next_window(GROW_START, 50e-6, 200e-6) == pytest.approx(20e-6)
    assert next_window(160e-6, 200e-6, 200e-6) == pytest.approx(200e-6)  # (the limit itself is within)
    assert next_window(160e-6, 201e-6, 200e-6) == pytest.approx(80e-6)
    assert next_window(15e-6, 1.0, 200e-6) == 0.0  # below GROW_START: off until answers come in time
    assert next_window(0.0, 1.0, 200e-6) == 0.0


class Waits:
    """A run-queue wait reader the test sets by hand, counting its reads."""

    def __init__(self) -> None:
        self.wait: float | None = 0.0
        self.reads = 0

    def __call__(self) -> float | None:
        self.reads += 1
        return self.wait


def test_busy_cpus_stop_polling_until_a_later_look_finds_them_free() -> None:
    waits = Waits()
    cpu = CpuWatch(reader=waits)
    assert not cpu.check(0.0) and waits.reads == 1  # the first reading has nothing to compare with
    assert not cpu.check(0.01) and waits.reads == 1  # read again only after CHECK_INTERVAL
    waits.wait = 0.001  # 1 ms of 60: 1.7 %
    assert not cpu.check(0.06) and waits.reads == 2
    waits.wait = 0.011  # 10 ms of the next 60: 17 %
    assert cpu.check(0.12) and waits.reads == 3
    assert cpu.check(0.12 + BACKOFF - 0.01) and waits.reads == 3  # contended: no look until BACKOFF
    waits.wait = 0.012  # 1 ms of the 500: free again
    assert not cpu.check(0.12 + BACKOFF) and waits.reads == 4
    assert not cpu.check(0.12 + BACKOFF + CHECK_INTERVAL / 2) and waits.reads == 4


def test_without_schedstat_polling_is_decided_by_the_window_alone() -> None:
    waits = Waits()
    waits.wait = None
    cpu = CpuWatch(reader=waits)
    assert not cpu.check(0.0) and not cpu.check(1e6) and waits.reads == 1


def test_a_thread_with_busy_cpus_does_not_poll_but_still_learns_its_window() -> None:
    loop, clock, waits = CallbackLoop(), Clock(), Waits()
    poll = BusyPoll(200e-6, clock=clock, cpu=CpuWatch(reader=waits))
    wait(poll, loop, clock, 60e-6)  # free CPUs: polls (the window passes), then grows
    assert poll.window == pytest.approx(20e-6)
    clock.now += CHECK_INTERVAL
    waits.wait = 0.5 * CHECK_INTERVAL  # half the interval spent waiting for a CPU
    poll.arm(cast(Any, loop))
    assert not poll.polling and loop.ready == []
    clock.now += 60e-6
    poll.read()
    assert poll.window == pytest.approx(40e-6)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="schedstat is Linux's")
def test_the_run_queue_wait_is_read_from_the_kernel() -> None:
    wait = thread_run_queue_wait()
    assert wait is not None and wait >= 0.0
