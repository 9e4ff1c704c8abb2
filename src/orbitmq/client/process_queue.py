"""ProcessQueue: the messages a consumer has pulled from one queue but not yet finished.

It holds the flow-control accounting the pull loop checks before every pull (cached message count,
cached body bytes, offset span between the oldest and newest cached message) and answers the one
question offsets depend on: which offset is safe to commit. With concurrent listeners messages finish
out of order, so the committable offset is the smallest offset still cached (or one past the newest
when nothing is cached): a crash then redelivers, never loses.

For orderly consumption the queue also carries its broker lock state and moves messages between the
cache and a "consuming" set so a failed batch can be put back and retried in order.

Pure: time comes from a `Clock`; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.message.model import MessageExt

LOCK_MAX_LIVE_S: Final = 30.0  # rocketmq.client.rebalance.lockMaxLiveTime
PULL_MAX_IDLE_S: Final = 120.0  # rocketmq.client.pull.pullMaxIdleTime


class ProcessQueue:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        # offset -> message; insertion follows pull order (ascending), re-sorted when messages come back.
        self._tree: dict[int, MessageExt] = {}
        self._consuming: dict[int, MessageExt] = {}
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = -1
        self.dropped = False
        self.locked = False
        self.last_lock_time = 0.0
        self.last_pull_time = clock.monotonic()
        self.last_consume_time = clock.monotonic()
        self.consuming = False  # orderly: a consume task currently owns this queue
        self.try_unlock_times = 0
        self.msg_acc_count = 0  # backlog behind the broker's max offset, from the last pull

    # ---- accounting -------------------------------------------------------------------------

    @property
    def max_span(self) -> int:
        if not self._tree:
            return 0
        # The cache stays in ascending offset order (see put_messages / make_messages_to_consume_again).
        return next(reversed(self._tree)) - next(iter(self._tree))

    def put_messages(self, messages: Iterable[MessageExt]) -> bool:
        """Cache pulled messages; True when there is something new to hand to an orderly consumer."""
        added = 0
        for msg in messages:
            if msg.queue_offset in self._tree:
                continue
            self._tree[msg.queue_offset] = msg
            added += 1
            self.msg_size += len(msg.body)
            self.queue_offset_max = max(self.queue_offset_max, msg.queue_offset)
        self.msg_count += added
        dispatch = added > 0 and not self.consuming
        if dispatch:
            self.consuming = True
        return dispatch

    def remove_messages(self, messages: Iterable[MessageExt]) -> int:
        """Drop finished messages; returns the offset that is now safe to commit (-1: nothing cached ever)."""
        self.last_consume_time = self.clock.monotonic()
        for msg in messages:
            if self._tree.pop(msg.queue_offset, None) is not None:
                self.msg_count -= 1
                self.msg_size -= len(msg.body)
        return self.committable_offset()

    def committable_offset(self) -> int:
        if self._tree:
            return next(iter(self._tree))
        return self.queue_offset_max + 1 if self.queue_offset_max >= 0 else -1

    def is_dropped(self) -> bool:
        """`dropped`, read through a call: it changes while the reader awaits."""
        return self.dropped

    @property
    def is_empty(self) -> bool:
        return not self._tree

    def cached(self) -> list[MessageExt]:
        return list(self._tree.values())

    def clear(self) -> None:
        self._tree.clear()
        self._consuming.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = -1

    def cache_info(self) -> tuple[int, int, int, int, int, int]:
        """(cached min offset, max offset, count, consuming min offset, max offset, count), zeros when
        empty: what GET_CONSUMER_RUNNING_INFO's ProcessQueueInfo reports (fillProcessQueueInfo)."""
        tree, busy = self._tree, self._consuming
        cached = (min(tree), max(tree), len(tree)) if tree else (0, 0, 0)
        consuming = (min(busy), max(busy), len(busy)) if busy else (0, 0, 0)
        return (*cached, *consuming)

    # ---- orderly ---------------------------------------------------------------------------

    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Move up to `batch_size` of the oldest messages to the consuming set (orderly)."""
        taken: list[MessageExt] = []
        while self._tree and len(taken) < batch_size:
            offset = next(iter(self._tree))
            msg = self._tree.pop(offset)
            self._consuming[offset] = msg
            taken.append(msg)
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        """The consuming batch succeeded: forget it; returns the offset to commit (-1 if nothing)."""
        if not self._consuming:
            return -1
        offset = max(self._consuming) + 1
        self.msg_count -= len(self._consuming)
        self.msg_size -= sum(len(m.body) for m in self._consuming.values())
        self._consuming.clear()
        return offset

    def make_messages_to_consume_again(self, messages: Iterable[MessageExt]) -> None:
        """The consuming batch failed: put it back in front, in offset order."""
        for msg in messages:
            self._consuming.pop(msg.queue_offset, None)
            self._tree[msg.queue_offset] = msg
        self._tree = dict(sorted(self._tree.items()))

    # ---- lock and liveness -----------------------------------------------------------------

    def mark_locked(self) -> None:
        self.locked = True
        self.last_lock_time = self.clock.monotonic()

    def is_lock_expired(self, max_live_s: float = LOCK_MAX_LIVE_S) -> bool:
        return self.clock.monotonic() - self.last_lock_time > max_live_s

    def is_pull_expired(self, max_idle_s: float = PULL_MAX_IDLE_S) -> bool:
        return self.clock.monotonic() - self.last_pull_time > max_idle_s

    def touch_pull(self) -> None:
        self.last_pull_time = self.clock.monotonic()
