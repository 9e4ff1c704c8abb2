"""SYNC_FLUSH sends waiting for the group commit, answered by the loop once per flush round.

A send under SYNC_FLUSH is acknowledged only after the fdatasync that covers its end offset returned
(RocketMQ's GroupCommitService); each waiting send costs one deque append and its answer is a transport
`Later`: no coroutine, future or Task per message.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from orbitmq.protocol.command import RemotingCommand
from orbitmq.store.flush import FlushService
from orbitmq.store.flush_wanted import FlushWanted
from orbitmq.store.segment_queue import MappedFileQueue

# The answer if the flush does not come in time (built only then).
TimeoutAnswer = Callable[[], RemotingCommand]


class Answerable(Protocol):
    """What the dispatcher binds to a request (transport.dispatch.Later)."""

    def answer(self, response: RemotingCommand | None) -> None: ...


A = TypeVar("A", bound=Answerable)


class FlushWaits(Generic[A]):
    """The waiting sends, oldest first. The flusher thread announces each flushed offset with one
    `call_soon_threadsafe`; `flushed()` then answers, in arrival order, every send whose end it covers.
    Sends arrive on the loop thread one after another, so their end offsets ascend along the deque: an
    answer never leaves before its own flush (a smaller end queued behind a larger one only waits longer).
    A send not covered within `syncFlushTimeout` ms is answered FLUSH_DISK_TIMEOUT by a loop timer at the
    oldest deadline (the flusher may be stuck in fdatasync and cannot time anything out itself).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        flusher: FlushService,
        timeout_ms: int,
        make_later: Callable[[], A],
        answer_all: Callable[[list[tuple[A, RemotingCommand]]], None] | None = None,
    ) -> None:
        self._loop = loop
        self._flusher = flusher
        # (read per send: typed as the compiled classes, not looked up through the interpreted flusher)
        self._files: MappedFileQueue = flusher.commit_log_files
        self._wanted: FlushWanted = flusher.wanted
        self._timeout = timeout_ms / 1000.0
        self._make_later = make_later
        # A flush round's answers at once (transport.dispatch.answer_together: each connection's in one
        # write, the counting after); without it, one `answer` call each.
        self._answer_all: Callable[[list[tuple[A, RemotingCommand]]], None] = answer_all or _answer_each
        # (end offset, deadline, the pending answer, the success answer, the timeout answer's builder)
        self._waits: collections.deque[tuple[int, float, A, RemotingCommand, TimeoutAnswer]] = (
            collections.deque()
        )
        self._timer: asyncio.TimerHandle | None = None
        flusher.flushed_listener = self._post

    def add(self, end_offset: int, answer: RemotingCommand, on_timeout: TimeoutAnswer) -> RemotingCommand | A:
        """`answer` once the log is flushed through `end_offset`: at once if it already is, else a
        pending answer (a `Later` the dispatcher binds to the request) that `flushed()` answers."""
        if self._files.flushed_where >= end_offset:
            return answer
        later = self._make_later()
        deadline = self._loop.time() + self._timeout
        self._waits.append((end_offset, deadline, later, answer, on_timeout))
        if self._wanted.want(end_offset):
            self._flusher.wake()  # (once per flusher sleep)
        if self._timer is None:
            self._timer = self._loop.call_at(deadline, self._expire)
        return later

    def _post(self, flushed: int) -> None:
        """On the flusher thread: hand the flushed offset to the loop (one wake-up per flush round)."""
        try:
            self._loop.call_soon_threadsafe(self.flushed, flushed)
        except RuntimeError:  # the loop is closed: the broker is shutting down, no one is left to answer
            pass

    def flushed(self, offset: int) -> None:
        waits = self._waits
        covered: list[tuple[A, RemotingCommand]] = []
        while waits and waits[0][0] <= offset:
            _, _, later, answer, _ = waits.popleft()
            covered.append((later, answer))
        if covered:
            self._answer_all(covered)

    def _expire(self) -> None:
        self._timer = None
        now = self._loop.time() + 0.001  # call_at may fire up to the clock resolution early
        waits = self._waits
        while waits and waits[0][1] <= now:
            _, _, later, _, on_timeout = waits.popleft()
            later.answer(on_timeout())
        if waits:
            self._timer = self._loop.call_at(waits[0][1], self._expire)

    def __len__(self) -> int:
        return len(self._waits)


def _answer_each(covered: Sequence[tuple[Answerable, RemotingCommand]]) -> None:
    for later, answer in covered:
        later.answer(answer)
