"""Offset planning for the Spark source: the arithmetic between "where we are" and "what to read next".

Positions from options, data-loss checks, `maxOffsetsPerTrigger`, the availableNow ceiling and the
ranges of the partitions. Every function is deterministic in its inputs (a replayed batch must plan
the same ranges). Pure Python, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from orbitmq.common.errors import OrbitError
from orbitmq.spark.offsets import EARLIEST, LATEST, OffsetMap, QueueRef
from orbitmq.spark.options import OffsetSpec


class DataLossError(OrbitError):
    """Records the query still needed are gone from the broker (and `failOnDataLoss` is true)."""


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Logical offsets `[start, end)` of one queue, read by one Spark task."""

    queue: QueueRef
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def resolve_position(
    spec: OffsetSpec, queue: QueueRef, min_offset: int, max_offset: int, timestamp_offset: int | None = None
) -> int:
    """One queue's offset for a start or end option.

    `timestamp_offset` is the broker's answer to SEARCH_OFFSET_BY_TIMESTAMP for `spec.timestamp` (the
    first offset stored at or after it); it is required only for a "timestamp" spec.
    """
    kind = spec.kind
    if kind == "timestamp":
        if timestamp_offset is None:
            raise ValueError(f"no offset was looked up for timestamp {spec.timestamp} of queue {queue}")
        return min(max(timestamp_offset, min_offset), max_offset)
    if kind == "specific":
        offset = spec.offsets.get(queue)
        if offset is None:
            kind = spec.fallback
        elif offset == EARLIEST:
            return min_offset
        elif offset == LATEST:
            return max_offset
        else:
            return offset
    return min_offset if kind == "earliest" else max_offset


def check_data_loss(
    wanted: Mapping[QueueRef, int],
    min_offsets: Mapping[QueueRef, int],
    max_offsets: Mapping[QueueRef, int],
    *,
    fail: bool,
) -> tuple[OffsetMap, list[str]]:
    """Moves offsets the broker no longer holds to the earliest available one, or raises.

    Two cases lose data: the offset is below the queue's min offset (retention deleted the records),
    or above its max offset (the queue was deleted and recreated, or its store truncated). Queues not
    in `min_offsets`/`max_offsets` (their broker is unknown right now) keep their offset.
    Returns the corrected offsets and one message per affected queue.
    """
    corrected: OffsetMap = dict(wanted)
    problems: list[str] = []
    for queue in sorted(wanted):
        offset = wanted[queue]
        low = min_offsets.get(queue)
        high = max_offsets.get(queue)
        if low is None or high is None:
            continue
        if offset < low:
            problems.append(
                f"queue {queue}: offsets [{offset}, {low}) were removed by the broker (retention) "
                f"before the query read them"
            )
            corrected[queue] = low
        elif offset > high:
            problems.append(
                f"queue {queue}: the query is at offset {offset} but the queue ends at {high} "
                f"(it was recreated or truncated); restarting it from {low}"
            )
            corrected[queue] = low
    if problems and fail:
        raise DataLossError(
            "some data may have been lost: "
            + "; ".join(problems)
            + ". If this is expected, set the option failOnDataLoss to false to skip to the earliest "
            "available offset instead of failing."
        )
    return corrected, problems


def rate_limit(start: Mapping[QueueRef, int], latest: Mapping[QueueRef, int], max_rows: int) -> OffsetMap:
    """End offsets admitting at most `max_rows` messages, split in proportion to each queue's backlog.

    Each queue with a backlog gets one message first (no starvation), the rest of the limit is shared
    in proportion to the remaining backlogs with integer floors, and the leftover units go to the
    largest fractional remainders (ties broken by queue order). If the limit is smaller than the
    number of queues with a backlog, each of them still advances by one (the only way every queue
    makes progress), which exceeds the limit by at most that difference.
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1, got {max_rows}")
    ends: OffsetMap = {}
    backlog: dict[QueueRef, int] = {}
    for queue in sorted(latest):
        begin = start.get(queue, 0)
        ends[queue] = max(begin, latest[queue])
        if latest[queue] > begin:
            backlog[queue] = latest[queue] - begin
    total = sum(backlog.values())
    if total <= max_rows:
        return ends
    for queue in backlog:
        ends[queue] = start.get(queue, 0) + 1
    remaining = max_rows - len(backlog)
    if remaining <= 0:
        return ends
    rest = {q: b - 1 for q, b in backlog.items() if b > 1}
    rest_total = sum(rest.values())
    shares: dict[QueueRef, int] = {}
    remainders: list[tuple[int, QueueRef]] = []
    for queue, size in rest.items():
        share, remainder = divmod(remaining * size, rest_total)
        shares[queue] = share
        remainders.append((-remainder, queue))
    leftover = remaining - sum(shares.values())
    for _, queue in sorted(remainders)[:leftover]:
        shares[queue] += 1
    for queue, share in shares.items():
        ends[queue] += share
    return ends


def cap_to_target(
    end: Mapping[QueueRef, int], start: Mapping[QueueRef, int], target: Mapping[QueueRef, int]
) -> OffsetMap:
    """Never read past the availableNow target; queues found after the target was taken wait."""
    capped: OffsetMap = {}
    for queue, offset in end.items():
        begin = start.get(queue, 0)
        limit = target.get(queue, begin)
        capped[queue] = max(begin, min(offset, limit))
    return capped


def plan_ranges(start: Mapping[QueueRef, int], end: Mapping[QueueRef, int]) -> list[QueueRange]:
    """Non-empty `[start, end)` ranges in queue order; a queue missing from `start` begins at 0."""
    ranges = []
    for queue in sorted(end):
        begin = start.get(queue, 0)
        if end[queue] > begin:
            ranges.append(QueueRange(queue, begin, end[queue]))
    return ranges


def split_ranges(ranges: Iterable[QueueRange], min_partitions: int | None) -> list[QueueRange]:
    """Cuts large ranges so there are at least `min_partitions` tasks (when there are enough messages).

    Each range gets a number of pieces in proportion to its share of all messages (at least one, at
    most its size); pieces of one range differ in size by at most one message. Deterministic, so a
    replayed batch is split the same way.
    """
    ranges = [r for r in ranges if r.size > 0]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    result: list[QueueRange] = []
    for r in ranges:
        pieces = min(r.size, max(1, -(-r.size * min_partitions // total)))
        base, extra = divmod(r.size, pieces)
        begin = r.start
        for i in range(pieces):
            length = base + (1 if i < extra else 0)
            result.append(QueueRange(r.queue, begin, begin + length))
            begin += length
    return result
