"""PullRequestHoldService: long polling for PULL_MESSAGE (RocketMQ's PullRequestHoldService).

A pull that finds nothing is held under `topic@queueId` until a matching message arrives
(`notify_message_arriving`, right after dispatch), its suspend timeout ends, or the service stops
(every held pull is answered). Answering is the pull processor's `wake` callback; this keeps the table.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from orbitmq.broker.client_registry import Subscription
from orbitmq.common.clock import SYSTEM_CLOCK, Clock

log: Final = logging.getLogger(__name__)


@dataclass(slots=True)
class HeldPull:
    conn: Any
    request: Any
    topic: str
    queue_id: int
    pull_from_offset: int
    deadline: float  # monotonic seconds
    subscription: Subscription | None


class PullRequestHoldService:
    def __init__(
        self,
        wake: Callable[[HeldPull], None],
        max_offset: Callable[[str, int], int],
        *,
        check_interval: float = 5.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._wake = wake
        self._max_offset = max_offset
        self._check_interval = check_interval
        self._clock = clock
        self.table: dict[str, list[HeldPull]] = {}
        self._changed = asyncio.Event()
        self._next_deadline: float | None = None  # at most the earliest deadline held (may be earlier)
        self._stopped = False
        # When the service loop wakes next (monotonic s). A hold wakes it early only if its deadline is
        # earlier: with equal suspend timeouts (the usual case) holds never wake the loop at all, so
        # it does not rescan every held pull per hold.
        self._next_wake = float("-inf")

    @staticmethod
    def key(topic: str, queue_id: int) -> str:
        return f"{topic}@{queue_id}"

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self.table.values())

    def hold(self, held: HeldPull) -> None:
        if self._stopped:
            self._wake(held)
            return
        self.table.setdefault(self.key(held.topic, held.queue_id), []).append(held)
        # Track the earliest deadline in O(1) per hold (a client can hold thousands), and wake the
        # service loop only when this pull's deadline is earlier than the loop's next wake.
        if self._next_deadline is None or held.deadline < self._next_deadline:
            self._next_deadline = held.deadline
        if held.deadline < self._next_wake:
            self._changed.set()

    def notify_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None
    ) -> None:
        """A message reached the queue (or the periodic check asks): answer the pulls it satisfies."""
        if not self.table:  # the store calls this per put: nothing to do while no pull is held
            return
        key = self.key(topic, queue_id)
        held = self.table.get(key)
        if not held:
            return
        now = self._clock.monotonic()
        keep: list[HeldPull] = []
        ready: list[HeldPull] = []
        for h in held:
            if (
                max_offset > h.pull_from_offset
                and (h.subscription is None or h.subscription.matches_tags_code(tags_code))
            ) or now >= h.deadline:
                ready.append(h)
            else:
                keep.append(h)
        if keep:
            self.table[key] = keep
        else:
            del self.table[key]
        for h in ready:
            self._safe_wake(h)

    def _safe_wake(self, h: HeldPull) -> None:
        try:
            self._wake(h)
        except Exception:
            log.exception("re-processing a held pull for %s@%d failed", h.topic, h.queue_id)

    def check_all(self) -> None:
        self._drop_closed()
        for key in list(self.table):
            topic, _, qid = key.rpartition("@")
            try:
                max_offset = self._max_offset(topic, int(qid))
            except Exception:
                log.exception("max offset of %s failed", key)
                max_offset = 0
            self.notify_message_arriving(topic, int(qid), max_offset, None)

    def _drop_closed(self) -> None:
        """Forget pulls whose connection is gone: nobody can receive their answer (bounds the memory a
        client that holds pulls and disconnects can leave behind)."""
        for key, held in list(self.table.items()):
            if any(getattr(h.conn, "closed", False) for h in held):
                kept = [h for h in held if not getattr(h.conn, "closed", False)]
                if kept:
                    self.table[key] = kept
                else:
                    del self.table[key]

    def _earliest_deadline(self) -> float | None:
        deadlines = [h.deadline for held in self.table.values() for h in held]
        return min(deadlines) if deadlines else None

    async def run(self) -> None:
        """The service loop: wakes at the earliest deadline, or every `check_interval` at the latest."""
        while not self._stopped:
            earliest = self._next_deadline
            timeout = self._check_interval
            now = self._clock.monotonic()
            if earliest is not None:
                timeout = max(0.0, min(timeout, earliest - now))
            self._next_wake = now + timeout
            self._changed.clear()
            woken = False
            try:
                # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation that races
                # with the timeout, and stop() would then wait for this loop forever.
                async with asyncio.timeout(timeout):
                    await self._changed.wait()
                woken = True
            except TimeoutError:
                pass
            finally:
                self._next_wake = float("-inf")  # until re-armed above, every hold wakes the loop
            if woken:
                continue  # a new hold carries an earlier deadline: recompute (mypyc: not inside try)
            self.check_all()
            self._next_deadline = self._earliest_deadline()  # O(n) once per check, not per hold

    def stop(self) -> None:
        """Answer every held pull now (each answers NOT_FOUND unless something arrived)."""
        self._stopped = True
        table, self.table = self.table, {}
        for held in table.values():
            for h in held:
                self._safe_wake(h)
