"""Which queue a 5.x send goes to: the proxy picks it (the request names none), as RocketMQ 5 does.

A message group always lands on one queue: Guava's `Hashing.consistentHash` (the jump consistent hash
of Lamping and Veach, on Java's 64-bit LCG) of the group's Java `String.hashCode()` over the write
queues; other sends take the write queues in turn.
"""

from __future__ import annotations

from typing import Final

from orbitmq.message.hashing import java_string_hash

_MASK64: Final = (1 << 64) - 1
_LCG_MULTIPLIER: Final = 2862933555777941757


def consistent_hash(key: int, buckets: int) -> int:
    """Guava `Hashing.consistentHash(long, int)`: a bucket in [0, buckets) that moves for as few keys
    as possible when `buckets` grows."""
    if buckets <= 0:
        raise ValueError(f"buckets must be positive, not {buckets}")
    state = key & _MASK64
    candidate = 0
    while True:
        state = (_LCG_MULTIPLIER * state + 1) & _MASK64
        next_double = ((state >> 33) + 1) / 2147483648.0
        following = int((candidate + 1) / next_double)
        if 0 <= following < buckets:
            candidate = following
        else:
            return candidate


class QueueSelector:
    """Round-robin per topic, or the message group's queue; at most `max_topics` counters kept."""

    def __init__(self, max_topics: int = 100_000) -> None:
        self._next: dict[str, int] = {}
        self._max_topics = max_topics

    def select(self, topic: str, write_queue_nums: int, message_group: str) -> int:
        if write_queue_nums <= 0:
            raise ValueError(f"topic {topic} has no write queue")
        if message_group:
            return consistent_hash(java_string_hash(message_group), write_queue_nums)
        turn = self._next.get(topic, -1) + 1
        if turn == 0 and len(self._next) >= self._max_topics:
            self._next.clear()
        self._next[topic] = turn
        return turn % write_queue_nums
