"""ProcessQueue accounting and the committable offset; orderly take/commit/put-back; lock expiry."""

from __future__ import annotations

from orbitmq.client.process_queue import ProcessQueue
from orbitmq.common.clock import FakeClock
from orbitmq.message.model import MessageExt


def msgs(*offsets: int, size: int = 10) -> list[MessageExt]:
    return [MessageExt("T", b"x" * size, queue_offset=o) for o in offsets]


def test_accounting_count_size_span() -> None:
    pq = ProcessQueue(FakeClock())
    assert pq.put_messages(msgs(5, 6, 7, 20, size=3))
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (4, 12, 15)
    pq.put_messages(msgs(7))  # duplicate is ignored
    assert pq.msg_count == 4


def test_committable_offset_is_smallest_unfinished() -> None:
    pq = ProcessQueue(FakeClock())
    batch = msgs(10, 11, 12, 13)
    pq.put_messages(batch)
    assert pq.remove_messages([batch[1], batch[3]]) == 10  # 10 still in flight
    assert pq.remove_messages([batch[0]]) == 12
    assert pq.remove_messages([batch[2]]) == 14  # all done: one past the newest
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (0, 0, 0)


def test_empty_queue_has_nothing_to_commit() -> None:
    assert ProcessQueue(FakeClock()).committable_offset() == -1


def test_orderly_take_commit_and_put_back_in_order() -> None:
    pq = ProcessQueue(FakeClock())
    assert pq.put_messages(msgs(1, 2, 3, 4))
    assert not pq.put_messages(msgs(5))  # already being consumed: no second dispatch
    first = pq.take_messages(2)
    assert [m.queue_offset for m in first] == [1, 2]
    pq.make_messages_to_consume_again(first)
    again = pq.take_messages(3)
    assert [m.queue_offset for m in again] == [1, 2, 3]
    assert pq.commit() == 4
    assert pq.msg_count == 2
    assert [m.queue_offset for m in pq.take_messages(10)] == [4, 5]
    assert pq.commit() == 6
    assert pq.take_messages(1) == [] and not pq.consuming


def test_lock_and_pull_expiry_follow_the_clock() -> None:
    clock = FakeClock()
    pq = ProcessQueue(clock)
    pq.mark_locked()
    clock.advance(29)
    assert not pq.is_lock_expired()
    clock.advance(2)
    assert pq.is_lock_expired()
    assert not pq.is_pull_expired()
    clock.advance(120)
    assert pq.is_pull_expired()
    pq.touch_pull()
    assert not pq.is_pull_expired()
