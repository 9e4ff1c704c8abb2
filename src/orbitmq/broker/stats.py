"""BrokerStats: the broker's one source of message counters (RocketMQ's BrokerStatsManager, reduced).

Counted per request, never per message, with no lock (the loop owns them). `roll()` keeps snapshots in
minute, hour and day rings (csListMinute/Hour/Day); a window's rate is the growth over its span.
statsAll, consumeTps, the runtime info, Prometheus and the console all read these objects, so they agree.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Final

from orbitmq.common.clock import Clock

ROLL_SECONDS: Final = 5.0
# The hour and day rings are fed by the same timer, every HOUR_EVERY / DAY_EVERY rolls (10 min and 1 h,
# RocketMQ's samplingInMinutes / samplingInHour): nothing extra per request.
HOUR_EVERY: Final = int(600 / ROLL_SECONDS)
DAY_EVERY: Final = int(3600 / ROLL_SECONDS)
MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0
# Enough snapshots to cover each span plus the one before it.
_KEEP: Final = int(MINUTE / ROLL_SECONDS) + 2
_KEEP_HOUR: Final = 7
_KEEP_DAY: Final = 25

Snapshot = tuple[float, int, int, int]  # (monotonic seconds, nums, bytes, times)


class Window:
    """What one item did over one span: RocketMQ's StatsSnapshot (sum, tps, avgpt) for messages and
    bytes. `times` counts requests, so avgpt is messages (or bytes) per request, as in StatsItem."""

    __slots__ = ("bytes", "elapsed", "nums", "times")

    def __init__(self, nums: int, size: int, times: int, elapsed: float) -> None:
        self.nums = nums
        self.bytes = size
        self.times = times
        self.elapsed = elapsed

    def add(self, other: Window) -> None:
        """Broker-wide windows are sums of the items' counts, over the longest item's elapsed time."""
        self.nums += other.nums
        self.bytes += other.bytes
        self.times += other.times
        self.elapsed = max(self.elapsed, other.elapsed)

    def snapshot(self, of_bytes: bool = False) -> tuple[int, float, float]:
        """(sum, tps, avgpt) of messages, or of bytes."""
        total = self.bytes if of_bytes else self.nums
        avgpt = total / self.times if self.times > 0 else 0.0
        return total, total / self.elapsed, avgpt


class StatItem:
    """One moving counter: messages, bytes and requests, with snapshots for the minute, hour and day
    windows (the hour and day rings are created at their first roll: most items never live that long)."""

    __slots__ = ("_day", "_hour", "_snapshots", "born", "bytes", "nums", "times")

    def __init__(self, now: float) -> None:
        self.nums = 0
        self.bytes = 0
        self.times = 0
        # The item starts from an implicit zero snapshot at `born`, so every window is meaningful before
        # the timer ran.
        self.born = now
        self._snapshots: deque[Snapshot] = deque(maxlen=_KEEP)
        self._hour: deque[Snapshot] | None = None
        self._day: deque[Snapshot] | None = None

    def snapshot(self, now: float) -> None:
        self._snapshots.append((now, self.nums, self.bytes, self.times))

    def snapshot_hour(self, now: float) -> None:
        if self._hour is None:
            self._hour = deque(maxlen=_KEEP_HOUR)
        self._hour.append((now, self.nums, self.bytes, self.times))

    def snapshot_day(self, now: float) -> None:
        if self._day is None:
            self._day = deque(maxlen=_KEEP_DAY)
        self._day.append((now, self.nums, self.bytes, self.times))

    def window(self, now: float, span: float = MINUTE) -> Window:
        """Growth over about the last `span` seconds: live counts against the oldest snapshot inside the
        span (the born baseline when the item is younger; the newest snapshot when the timer has not
        run for longer than that), over at least one roll interval."""
        ring = self._snapshots if span <= MINUTE else self._hour if span <= HOUR else self._day
        base: Snapshot = (self.born, 0, 0, 0)
        if now - self.born > span and ring:
            base = ring[-1]
            for snap in ring:
                if now - snap[0] <= span:
                    base = snap
                    break
        # Never divide by less than one roll interval: a counter that is seconds old would otherwise
        # report a spike (its first burst over a tiny elapsed time).
        elapsed = max(now - base[0], ROLL_SECONDS)
        return Window(self.nums - base[1], self.bytes - base[2], self.times - base[3], elapsed)

    def rates(self, now: float, span: float = MINUTE) -> tuple[float, float]:
        """(messages/s, bytes/s) over about the last `span` seconds."""
        w = self.window(now, span)
        return w.nums / w.elapsed, w.bytes / w.elapsed


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
        self._rolls = 0
        self.slow_flushes = 0  # looks at the flusher that found it slow (services/housekeeping.py)

    def _today(self) -> int:
        return time.localtime(self.clock.now_ms() / 1000).tm_yday

    # ------------------------------------------------------------------------------ hot path
    def put(self, topic: str, nums: int, size: int) -> None:
        item = self.topic_put.get(topic)
        if item is None:
            item = self.topic_put[topic] = StatItem(self.clock.monotonic())
        item.nums += nums
        item.bytes += size
        item.times += 1

    def get(self, group: str, topic: str, nums: int, size: int) -> None:
        topics = self.group_get.get(group)
        if topics is None:
            topics = self.group_get[group] = {}
        item = topics.get(topic)
        if item is None:
            item = topics[topic] = StatItem(self.clock.monotonic())
        item.nums += nums
        item.bytes += size
        item.times += 1

    # ------------------------------------------------------------------------------ timer
    def roll(self) -> None:
        now = self.clock.monotonic()
        self._rolls += 1
        hourly, daily = self._rolls % HOUR_EVERY == 0, self._rolls % DAY_EVERY == 0
        for item in self.items():
            item.snapshot(now)
            if hourly:
                item.snapshot_hour(now)
            if daily:
                item.snapshot_day(now)
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

    def items(self) -> list[StatItem]:
        return [*self.topic_put.values(), *self._get_items()]

    def windows(self, item: StatItem | list[StatItem]) -> tuple[Window, Window, Window]:
        """The minute, hour and day windows of one item, or the sums over several (broker totals)."""
        now = self.clock.monotonic()
        out = []
        for span in (MINUTE, HOUR, DAY):
            if isinstance(item, StatItem):
                out.append(item.window(now, span))
                continue
            total = Window(0, 0, 0, ROLL_SECONDS)
            for one in item:
                total.add(one.window(now, span))
            out.append(total)
        return out[0], out[1], out[2]

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
