"""RebalanceLockManager: the broker side of orderly consumption (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ).

Per group: queue -> (client id, last renewal), expiring `max_live_ms` after it. Locking renews the
client's own queues, takes free or expired ones and leaves out those another live client holds;
unlocking removes only the caller's locks. Time comes from the injected Clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.message.model import MessageQueue


@dataclass(slots=True)
class LockEntry:
    client_id: str
    last_update: float  # monotonic seconds


class RebalanceLockManager:
    def __init__(self, *, max_live_ms: int = 60000, clock: Clock = SYSTEM_CLOCK) -> None:
        self._max_live = max_live_ms / 1000.0
        self._clock = clock
        self.table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, entry: LockEntry, now: float) -> bool:
        return now - entry.last_update > self._max_live

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        entry = self.table.get(group, {}).get(mq)
        return (
            entry is not None
            and entry.client_id == client_id
            and not self._expired(entry, self._clock.monotonic())
        )

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        now = self._clock.monotonic()
        locks = self.table.setdefault(group, {})
        locked: set[MessageQueue] = set()
        for mq in mqs:
            entry = locks.get(mq)
            if entry is None or entry.client_id == client_id or self._expired(entry, now):
                locks[mq] = LockEntry(client_id, now)
                locked.add(mq)
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        locks = self.table.get(group)
        if not locks:
            return
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]
        if not locks:
            del self.table[group]
