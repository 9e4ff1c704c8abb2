"""RebalanceLockManager: renew, take free or expired, leave others' live locks, unlock only own."""

from __future__ import annotations

from orbitmq.broker.locks import RebalanceLockManager
from orbitmq.common.clock import FakeClock
from orbitmq.message.model import MessageQueue

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)


def test_lock_expiry_and_ownership() -> None:
    clock = FakeClock()
    locks = RebalanceLockManager(max_live_ms=60000, clock=clock)
    assert locks.try_lock_batch("g", [Q0, Q1], "c1") == {Q0, Q1}
    assert locks.try_lock_batch("g", [Q0, Q1], "c2") == set()
    clock.advance(30)
    assert locks.try_lock_batch("g", [Q0], "c1") == {Q0}  # renewal
    clock.advance(40)  # Q1 is 70 s old, Q0 40 s
    assert locks.try_lock_batch("g", [Q0, Q1], "c2") == {Q1}
    assert locks.is_locked("g", Q1, "c2") and not locks.is_locked("g", Q1, "c1")


def test_unlock_only_removes_own_locks() -> None:
    locks = RebalanceLockManager(clock=FakeClock())
    locks.try_lock_batch("g", [Q0], "c1")
    locks.unlock_batch("g", [Q0], "c2")
    assert locks.is_locked("g", Q0, "c1")
    locks.unlock_batch("g", [Q0], "c1")
    assert locks.try_lock_batch("g", [Q0], "c2") == {Q0}
