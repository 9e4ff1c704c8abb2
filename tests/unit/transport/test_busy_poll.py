"""BusyPoll without sockets: a loop stand-in that only collects `call_soon` callbacks."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, cast

import pytest

from orbitmq.transport.busy_poll import BusyPoll, busy_poll


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
    assert isinstance(busy_poll(50), BusyPoll) and busy_poll(50).window == pytest.approx(50e-6)  # type: ignore[union-attr]
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match="at least 0"):
            BusyPoll(bad)
        with pytest.raises(ValueError, match="at least 0 µs"):
            busy_poll(bad)


def test_an_armed_loop_gets_a_ready_callback_every_turn_until_the_window_ends() -> None:
    loop = CallbackLoop()
    poll = BusyPoll(0.02)
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
    poll.arm(cast(Any, stopped))  # that loop never runs its tick again
    poll.arm(cast(Any, fresh))
    assert len(fresh.ready) == 1 and poll.polling
    stopped.turn()  # a late tick of the old loop schedules nothing
    assert stopped.ready == [] and len(fresh.ready) == 1
