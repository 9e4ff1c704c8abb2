"""The offset model of the Spark source: which queue, which logical offset, and its JSON form.

A queue is (topic, broker name, queue id) and an offset its consume-queue index, so `[start, end)`
always reads the same records. The JSON form is `{"topic": {"broker": {"queueId": offset}}}` with
sorted keys: Spark compares checkpointed offsets as exact strings. Pure Python, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import orjson

EARLIEST = -2
LATEST = -1

OffsetJson = dict[str, dict[str, dict[str, int]]]


class QueueRef(NamedTuple):
    """One message queue: ordered by topic, then broker, then queue id (RocketMQ's queue order)."""

    topic: str
    broker: str
    queue_id: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.broker}/{self.queue_id}"


OffsetMap = dict[QueueRef, int]


def to_offset_json(offsets: Mapping[QueueRef, int]) -> OffsetJson:
    """The checkpoint JSON of `offsets` (RocketMQ's old Spark connector's form), every level's keys
    sorted. Queue ids are string keys: an int key would not survive a checkpoint round trip.
    """
    nested: OffsetJson = {}
    for queue in sorted(offsets):
        nested.setdefault(queue.topic, {}).setdefault(queue.broker, {})[str(queue.queue_id)] = int(
            offsets[queue]
        )
    return nested


def from_offset_json(data: Any, *, what: str = "offset", allow_sentinels: bool = False) -> OffsetMap:
    """Parses the nested offset form (a dict, or its JSON text) into a flat map.

    Raises ValueError naming the bad entry. With `allow_sentinels`, -2 (earliest) and -1 (latest) are
    accepted as offsets; otherwise offsets must be >= 0.
    """
    if isinstance(data, str | bytes):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"{what} is not valid JSON ({exc}): {data!r}") from None
    if not isinstance(data, dict):
        raise ValueError(f'{what} must be a JSON object {{"topic": {{"broker": {{"queueId": offset}}}}}}')
    result: OffsetMap = {}
    lowest = EARLIEST if allow_sentinels else 0
    for topic, brokers in data.items():
        if not isinstance(brokers, dict):
            raise ValueError(f"{what}: topic {topic!r} must map to an object of brokers, got {brokers!r}")
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise ValueError(
                    f"{what}: broker {topic!r}/{broker!r} must map to an object of queue ids, got {queues!r}"
                )
            for queue_id, offset in queues.items():
                try:
                    qid = int(queue_id)
                except ValueError:
                    raise ValueError(
                        f"{what}: queue id {queue_id!r} of {topic}/{broker} is not an integer"
                    ) from None
                if qid < 0:
                    raise ValueError(f"{what}: queue id {qid} of {topic}/{broker} is negative")
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < lowest:
                    allowed = "an integer >= 0, -2 (earliest) or -1 (latest)" if allow_sentinels else ">= 0"
                    raise ValueError(
                        f"{what}: offset of {topic}/{broker}/{qid} must be {allowed}, got {offset!r}"
                    )
                result[QueueRef(topic, broker, qid)] = offset
    return result


def offset_json_text(offsets: Mapping[QueueRef, int]) -> str:
    """Deterministic JSON text of an offset map (for logs and commit messages)."""
    return orjson.dumps(to_offset_json(offsets)).decode()


def topics_of(queues: Iterable[QueueRef]) -> list[str]:
    return sorted({q.topic for q in queues})
