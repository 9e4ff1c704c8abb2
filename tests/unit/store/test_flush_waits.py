"""The group commit's loop side (broker/processors/flush_waits.py) on a real SYNC_FLUSH store whose
flusher rounds the test runs by hand: a send is answered only once a flush covered its end offset, in
order, each exactly once; FLUSH_DISK_TIMEOUT when no flush comes in time; at once when already flushed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from orbitmq.broker.processors.flush_waits import FlushWaits
from orbitmq.common.errors import StoreError
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.store import MessageStore
from orbitmq.store.flush import FlushService
from orbitmq.store.flush_wanted import FlushWanted

from .conftest import make_message, small_config


class Pending:
    """Stands in for the dispatcher's Later: records what it is answered with."""

    def __init__(self) -> None:
        self.answers: list[RemotingCommand | None] = []

    def answer(self, response: RemotingCommand | None) -> None:
        self.answers.append(response)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    s = MessageStore(small_config(tmp_path, flush_disk_type="SYNC_FLUSH"))
    s.load()
    s.start()
    assert s.flusher is not None
    s.flusher.stop(final_flush=False)  # no flusher thread: the test runs the rounds
    try:
        yield s
    finally:
        s.shutdown()


def _flusher(store: MessageStore) -> FlushService:
    assert store.flusher is not None
    return store.flusher


def _ok(n: int) -> RemotingCommand:
    return RemotingCommand.response(ResponseCode.SUCCESS, f"ok {n}")


def _timeout() -> RemotingCommand:
    return RemotingCommand.response(ResponseCode.FLUSH_DISK_TIMEOUT, "late")


async def _posted() -> None:
    """Let the loop run what the flusher posted with call_soon_threadsafe."""
    for _ in range(3):
        await asyncio.sleep(0)


def _each(covered: list[tuple[Pending, RemotingCommand]]) -> None:
    """An `answer_all` (the broker's answers a round together) that answers each in turn."""
    for later, answer in covered:
        later.answer(answer)


@pytest.mark.parametrize("together", [False, True], ids=["one-by-one", "together"])
async def test_a_send_is_answered_only_by_a_flush_that_covers_it(store: MessageStore, together: bool) -> None:
    flusher = _flusher(store)
    waits = FlushWaits(asyncio.get_running_loop(), flusher, 60_000, Pending, _each if together else None)
    first = store.put_message(make_message(body=b"one"))
    pending_first = waits.add(first.end_offset, _ok(1), _timeout)
    assert isinstance(pending_first, Pending)
    assert flusher.wanted.wanted == first.end_offset  # the flusher was told what to cover
    flusher._round()  # one fdatasync through the first message; announced to the loop
    second = store.put_message(make_message(body=b"two"))  # stored after that flush began
    pending_second = waits.add(second.end_offset, _ok(2), _timeout)
    assert isinstance(pending_second, Pending)
    await _posted()
    assert [a.remark for a in pending_first.answers if a] == ["ok 1"]
    assert pending_second.answers == []  # not covered yet: no answer
    assert len(waits) == 1
    flusher._round()
    await _posted()
    assert [a.remark for a in pending_second.answers if a] == ["ok 2"]
    assert len(pending_first.answers) == 1  # answered once
    # Already flushed: the answer comes back at once, nothing waits.
    assert waits.add(second.end_offset, _ok(3), _timeout).remark == "ok 3"  # type: ignore[union-attr]
    assert len(waits) == 0


async def test_one_flush_answers_every_send_it_covered_in_order(store: MessageStore) -> None:
    flusher = _flusher(store)
    order: list[str] = []

    class Ordered(Pending):
        def answer(self, response: RemotingCommand | None) -> None:
            order.append(response.remark if response is not None and response.remark else "")

    waits = FlushWaits(asyncio.get_running_loop(), flusher, 60_000, Ordered)
    for i in range(20):
        r = store.put_message(make_message(body=b"%d" % i))
        assert isinstance(waits.add(r.end_offset, _ok(i), _timeout), Ordered)
    flusher._round()
    await _posted()
    assert order == [f"ok {i}" for i in range(20)]


async def test_a_flush_hands_every_answer_it_covered_over_at_once(store: MessageStore) -> None:
    flusher = _flusher(store)
    rounds: list[list[str]] = []

    def answer_all(covered: list[tuple[Pending, RemotingCommand]]) -> None:
        rounds.append([answer.remark or "" for _, answer in covered])

    waits = FlushWaits(asyncio.get_running_loop(), flusher, 60_000, Pending, answer_all)
    for i in range(5):
        r = store.put_message(make_message(body=b"%d" % i))
        assert isinstance(waits.add(r.end_offset, _ok(i), _timeout), Pending)
    flusher._round()
    await _posted()
    r = store.put_message(make_message(body=b"late"))
    assert isinstance(waits.add(r.end_offset, _ok(5), _timeout), Pending)
    flusher._round()
    await _posted()
    assert rounds == [[f"ok {i}" for i in range(5)], ["ok 5"]]  # one call per round, in order


async def test_no_flush_in_time_answers_flush_disk_timeout(store: MessageStore) -> None:
    waits = FlushWaits(asyncio.get_running_loop(), _flusher(store), 50, Pending)
    r = store.put_message(make_message())
    pending = waits.add(r.end_offset, _ok(1), _timeout)
    assert isinstance(pending, Pending)
    await asyncio.sleep(0.3)
    assert [a.code for a in pending.answers if a] == [ResponseCode.FLUSH_DISK_TIMEOUT]
    assert len(waits) == 0


def test_want_wakes_a_sleeping_flusher(tmp_path: Path) -> None:
    """A flusher asleep for a minute (ASYNC_FLUSH, 60 s interval) is woken by want() and announces the
    flush: without the wake-up nothing would be heard for a minute."""
    s = MessageStore(small_config(tmp_path, flush_interval_commit_log=60_000))
    s.load()
    s.start()
    try:
        flusher = _flusher(s)
        heard: list[int] = []
        flusher.flushed_listener = heard.append
        r = s.put_message(make_message())
        time.sleep(0.05)  # the thread is asleep now
        assert s.flushed_offset < r.end_offset
        flusher.want(r.end_offset)
        for _ in range(500):
            if heard and heard[-1] >= r.end_offset:
                break
            time.sleep(0.01)
        assert heard and heard[-1] >= r.end_offset
        assert s.flushed_offset >= r.end_offset
    finally:
        s.shutdown()


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    for _ in range(1000):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"not {what} within 10 s")


def _sends(store: MessageStore, flusher: FlushService, n: int) -> list[bool]:
    """`n` SYNC_FLUSH sends as the broker makes them: a put, then want(); what each want() answered."""
    return [flusher.wanted.want(store.put_message(make_message()).end_offset) for _ in range(n)]


def test_want_wakes_a_gathering_flusher_at_the_count() -> None:
    wanted = FlushWanted()
    wanted.gather_until = 3
    assert [wanted.want(10), wanted.want(20), wanted.want(30), wanted.want(40)] == [False, False, True, False]
    assert wanted.gather_until == 0 and wanted.sends == 4 and wanted.wanted == 40


def test_a_group_commit_gathers_a_burst_like_the_last_one(store: MessageStore) -> None:
    """After a round of 4 sends, the next round waits for 4 before its fdatasync (here the last flush
    is said to have taken 30 s, so only the count can end the wait); one send alone is not waited for,
    nor is a burst that came long ago."""
    flusher = _flusher(store)
    flusher._running = True  # (its thread is stopped: the test plays it)
    flusher.config.group_commit_gather_max_micros = 30_000_000
    _sends(store, flusher, 4)
    flusher._gather()  # the first round: nothing known, no wait
    flusher._round()
    assert flusher._last_round_arrivals == 4
    flusher.flush_seconds_last = 30.0
    flusher._round_started = time.monotonic()  # (however long the first flush took)
    _sends(store, flusher, 1)
    gathering = threading.Thread(target=flusher._gather)
    gathering.start()
    _wait_for(lambda: flusher.wanted.gather_until == 8, "gathering")
    assert _sends(store, flusher, 2) == [False, False]
    assert gathering.is_alive() and flusher.wanted.gather_until == 8
    assert _sends(store, flusher, 1) == [True]  # the fourth: the broker wakes the flusher
    flusher.wake()
    gathering.join(10)
    assert not gathering.is_alive()
    assert flusher._last_round_arrivals == 4 and flusher.wanted.gather_until == 0
    flusher._round()
    # a lone send after a round of one, and a send after a burst of 4 a second ago: neither waits
    # (each gathering would hold it for the 30 s the last flush is said to have taken)
    for arrivals, age in ((1, 0.0), (4, 1.0)):
        flusher.flush_seconds_last = 30.0
        flusher._last_round_arrivals = arrivals
        flusher._round_started = time.monotonic() - age
        _sends(store, flusher, 1)
        alone = threading.Thread(target=flusher._gather)
        alone.start()
        alone.join(10)
        assert not alone.is_alive(), (arrivals, age)
        assert flusher._last_round_arrivals == 1
        flusher._round()


def test_gather_limit_is_a_checked_config_key(tmp_path: Path) -> None:
    s = MessageStore(small_config(tmp_path, flush_disk_type="SYNC_FLUSH", group_commit_gather_max_micros=-1))
    with pytest.raises(StoreError, match="groupCommitGatherMaxMicros must be at least 0, not -1"):
        s.load()
