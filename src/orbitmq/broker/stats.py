"""BrokerStats: the broker's one source of message counters (RocketMQ's BrokerStatsManager, reduced).

Counted per request, never per message: a send adds its message count and bytes to its topic's item, a
pull adds what it returned to its group@topic item. Each is two int additions on an object found with
one (put) or two (get) dict lookups: no lock (everything runs on the broker's loop), no allocation once
the item exists. Broker-wide totals and TPS are sums computed when read.

Moving windows: `roll()`, called by a timer every `ROLL_SECONDS`, appends one snapshot per item to a
short ring (RocketMQ's csListMinute); `tps()` divides the growth since the oldest snapshot of the span by
the time it took. GET_CONSUME_STATS' consumeTps, GET_BROKER_RUNTIME_INFO's put/get totals and TPS, the
Prometheus collector and the console all read these objects, so they agree.
"""

from __future__ import annotations

import time
from collections import deque

from orbitmq.common.clock import Clock

ROLL_SECONDS = 5.0
# Enough snapshots to cover one minute plus the one before it.
_KEEP = int(60 / ROLL_SECONDS) + 2


class StatItem:
    """One moving counter: messages and bytes, with snapshots for the windows."""

    __slots__ = ("_snapshots", "bytes", "nums")

    def __init__(self, now: float) -> None:
        self.nums = 0
        self.bytes = 0
        # (monotonic seconds, nums, bytes): the item starts with a zero baseline, so the first window is
        # meaningful before the timer ran.
        self._snapshots: deque[tuple[float, int, int]] = deque([(now, 0, 0)], maxlen=_KEEP)

    def snapshot(self, now: float) -> None:
        self._snapshots.append((now, self.nums, self.bytes))

    def rates(self, now: float, span: float = 60.0) -> tuple[float, float]:
        """(messages/s, bytes/s) over about the last `span` seconds: live counts against the oldest
        snapshot inside the span (the newest one when the timer has not run for longer than that), over
        at least one roll interval."""
        base = self._snapshots[-1]
        for snap in self._snapshots:
            if now - snap[0] <= span:
                base = snap
                break
        # Never divide by less than one roll interval: a counter that is seconds old would otherwise
        # report a spike (its first burst over a tiny elapsed time).
        elapsed = max(now - base[0], ROLL_SECONDS)
        return (self.nums - base[1]) / elapsed, (self.bytes - base[2]) / elapsed


class BrokerStats:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.topic_put: dict[str, StatItem] = {}
        # group -> topic -> item: two lookups, no key tuple built per pull.
        self.group_get: dict[str, dict[str, StatItem]] = {}
        # RocketMQ's BrokerStats: totals at this and the previous midnight (local time).
        self.put_total_today_morning = 0
        self.put_total_yesterday_morning = 0
        self.get_total_today_morning = 0
        self.get_total_yesterday_morning = 0
        self._day = self._today()

    def _today(self) -> int:
        return time.localtime(self.clock.now_ms() / 1000).tm_yday

    # ------------------------------------------------------------------------------ hot path
    def put(self, topic: str, nums: int, size: int) -> None:
        item = self.topic_put.get(topic)
        if item is None:
            item = self.topic_put[topic] = StatItem(self.clock.monotonic())
        item.nums += nums
        item.bytes += size

    def get(self, group: str, topic: str, nums: int, size: int) -> None:
        topics = self.group_get.get(group)
        if topics is None:
            topics = self.group_get[group] = {}
        item = topics.get(topic)
        if item is None:
            item = topics[topic] = StatItem(self.clock.monotonic())
        item.nums += nums
        item.bytes += size

    # ------------------------------------------------------------------------------ timer
    def roll(self) -> None:
        now = self.clock.monotonic()
        for item in self.topic_put.values():
            item.snapshot(now)
        for topics in self.group_get.values():
            for item in topics.values():
                item.snapshot(now)
        day = self._today()
        if day != self._day:
            self._day = day
            self.put_total_yesterday_morning = self.put_total_today_morning
            self.put_total_today_morning = self.put_total()
            self.get_total_yesterday_morning = self.get_total_today_morning
            self.get_total_today_morning = self.get_total()

    # ------------------------------------------------------------------------------ readers
    def put_tps(self, topic: str, span: float = 60.0) -> float:
        item = self.topic_put.get(topic)
        return 0.0 if item is None else item.rates(self.clock.monotonic(), span)[0]

    def consume_tps(self, group: str, topic: str | None = None, span: float = 60.0) -> float:
        """Messages per second pulled by `group` (from `topic`, or all its topics): ConsumeStats'
        consumeTps."""
        topics = self.group_get.get(group)
        if not topics:
            return 0.0
        now = self.clock.monotonic()
        if topic is not None:
            item = topics.get(topic)
            return 0.0 if item is None else item.rates(now, span)[0]
        return sum(item.rates(now, span)[0] for item in topics.values())

    def _get_items(self) -> list[StatItem]:
        return [item for topics in self.group_get.values() for item in topics.values()]

    def put_total(self) -> int:
        """Messages put since start, all topics (broker totals are sums: nothing extra on the hot path)."""
        return sum(item.nums for item in self.topic_put.values())

    def get_total(self) -> int:
        return sum(item.nums for item in self._get_items())

    def broker_tps(self, span: float = 60.0) -> tuple[float, float]:
        """(messages put/s, messages pulled/s) over the window, whole broker."""
        now = self.clock.monotonic()
        put = sum(item.rates(now, span)[0] for item in self.topic_put.values())
        get = sum(item.rates(now, span)[0] for item in self._get_items())
        return put, get

    def runtime_info(self) -> dict[str, str]:
        put_tps, get_tps = self.broker_tps()
        return {
            "msgPutTotalTodayNow": str(self.put_total()),
            "msgGetTotalTodayNow": str(self.get_total()),
            "msgPutTotalTodayMorning": str(self.put_total_today_morning),
            "msgPutTotalYesterdayMorning": str(self.put_total_yesterday_morning),
            "msgGetTotalTodayMorning": str(self.get_total_today_morning),
            "msgGetTotalYesterdayMorning": str(self.get_total_yesterday_morning),
            "sendTps": f"{put_tps:.2f}",
            "consumeTps": f"{get_tps:.2f}",
        }
