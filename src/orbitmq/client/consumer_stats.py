"""ConsumerStats: a push consumer's per-topic pull and consume counters, reported as ConsumeStatus in
GET_CONSUMER_RUNNING_INFO (RocketMQ's ConsumerStatsManager): pullRT / pullTPS, consumeRT, consumeOKTPS,
consumeFailedTPS over the last minute and consumeFailedMsgs over the last hour.

No timer: each record (one per pull, one per listener call, never per message) first takes a snapshot
when the newest is older than SAMPLE_S, so windows cost a clock read and a few additions per record.
Pure: time comes from a `Clock`; no I/O.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from orbitmq.common.clock import SYSTEM_CLOCK, Clock

SAMPLE_S: Final = 10.0
MINUTE_S, HOUR_S = 60.0, 3600.0
_KEEP: Final = int(HOUR_S / SAMPLE_S) + 2  # one hour of 10 s snapshots (small tuples, one deque per topic)

# totals: pulls, pulled messages, pull RT ms, listener calls, consume RT ms, OK messages, failed messages
_N: Final = 7
Totals = tuple[float, ...]


class _TopicStats:
    __slots__ = ("snapshots", "totals")

    def __init__(self, now: float) -> None:
        self.totals = [0.0] * _N
        self.snapshots: deque[tuple[float, Totals]] = deque([(now, (0.0,) * _N)], maxlen=_KEEP)

    def sample(self, now: float) -> None:
        if now - self.snapshots[-1][0] >= SAMPLE_S:
            self.snapshots.append((now, tuple(self.totals)))

    def growth(self, now: float, span: float) -> tuple[float, list[float]]:
        """(elapsed seconds, growth of each total) since the oldest snapshot inside `span`."""
        base = self.snapshots[-1]
        for snap in self.snapshots:
            if now - snap[0] <= span:
                base = snap
                break
        elapsed = max(now - base[0], 1.0)
        return elapsed, [t - b for t, b in zip(self.totals, base[1], strict=True)]


class ConsumerStats:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.topics: dict[str, _TopicStats] = {}

    def _topic(self, topic: str) -> _TopicStats:
        now = self.clock.monotonic()
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = _TopicStats(now)
        stats.sample(now)
        return stats

    def pulled(self, topic: str, messages: int, rt_ms: float) -> None:
        totals = self._topic(topic).totals
        totals[0] += 1
        totals[1] += messages
        totals[2] += rt_ms

    def consumed(self, topic: str, ok: int, failed: int, rt_ms: float) -> None:
        totals = self._topic(topic).totals
        totals[3] += 1
        totals[4] += rt_ms
        totals[5] += ok
        totals[6] += failed

    def status(self, topic: str) -> dict[str, float | int]:
        """ConsumeStatus' JSON object (properties alphabetical, as fastjson writes them)."""
        stats = self.topics.get(topic)
        if stats is None:
            minute: list[float] = [0.0] * _N
            hour: list[float] = [0.0] * _N
            elapsed = 1.0
        else:
            now = self.clock.monotonic()
            elapsed, minute = stats.growth(now, MINUTE_S)
            _, hour = stats.growth(now, HOUR_S)
        pulls, pulled, pull_rt, calls, consume_rt, ok, failed = minute
        return {
            "consumeFailedMsgs": int(hour[6]),
            "consumeFailedTPS": failed / elapsed,
            "consumeOKTPS": ok / elapsed,
            "consumeRT": consume_rt / calls if calls else 0.0,
            "pullRT": pull_rt / pulls if pulls else 0.0,
            "pullTPS": pulled / elapsed,
        }
