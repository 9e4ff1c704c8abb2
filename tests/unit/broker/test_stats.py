"""BrokerStats: per-topic/per-group counters and their one-minute moving windows (fake clock)."""

from __future__ import annotations

import pytest

from orbitmq.broker.stats import ROLL_SECONDS, BrokerStats
from orbitmq.common.clock import FakeClock


def roll_for(stats: BrokerStats, clock: FakeClock, seconds: float) -> None:
    for _ in range(int(seconds / ROLL_SECONDS)):
        clock.advance(ROLL_SECONDS)
        stats.roll()


def test_puts_and_gets_are_counted_per_topic_and_group() -> None:
    clock = FakeClock()
    stats = BrokerStats(clock)
    stats.put("T", 3, 300)
    stats.put("T", 1, 100)
    stats.put("U", 2, 50)
    stats.get("G", "T", 4, 400)
    assert (stats.topic_put["T"].nums, stats.topic_put["T"].bytes) == (4, 400)
    assert stats.group_get["G"]["T"].nums == 4
    info = stats.runtime_info()
    assert info["msgPutTotalTodayNow"] == "6"
    assert info["msgGetTotalTodayNow"] == "4"


def test_tps_is_over_the_last_minute_not_since_boot() -> None:
    clock = FakeClock()
    stats = BrokerStats(clock)
    stats.get("G", "T", 0, 0)  # the item exists from t=0
    roll_for(stats, clock, 120)  # two idle minutes
    for _ in range(12):  # then 10 msg/s for a minute
        stats.get("G", "T", 50, 5000)
        clock.advance(ROLL_SECONDS)
        stats.roll()
    assert stats.consume_tps("G", "T") == pytest.approx(10.0, rel=0.1)
    assert stats.consume_tps("G") == pytest.approx(10.0, rel=0.1)
    roll_for(stats, clock, 120)  # the consumer stops: the window empties
    assert stats.consume_tps("G", "T") == 0.0
    assert stats.consume_tps("other") == 0.0


def test_first_window_uses_the_items_zero_baseline_over_at_least_one_interval() -> None:
    clock = FakeClock()
    stats = BrokerStats(clock)
    stats.put("T", 0, 0)
    clock.advance(8.0)
    stats.put("T", 40, 4000)
    assert stats.put_tps("T") == pytest.approx(5.0)  # before the timer ran: since the item appeared
    young = BrokerStats(clock)
    young.put("T", 20, 2000)
    clock.advance(0.1)
    assert young.put_tps("T") == pytest.approx(20 / ROLL_SECONDS)  # no spike from a tiny elapsed time


def test_day_change_moves_the_morning_totals() -> None:
    clock = FakeClock()
    stats = BrokerStats(clock)
    stats.put("T", 7, 70)
    clock.advance(86400)
    stats.roll()
    info = stats.runtime_info()
    assert info["msgPutTotalTodayMorning"] == "7"
    assert info["msgPutTotalYesterdayMorning"] == "0"


def test_hour_and_day_windows_are_fed_by_the_same_timer() -> None:
    clock = FakeClock()
    stats = BrokerStats(clock)
    stats.put("T", 0, 0)
    stats.put("T", 100, 1000)  # two requests, 100 messages
    roll_for(stats, clock, 2 * 3600)  # two idle hours
    for _ in range(12):  # then 2 msg/s for 30 minutes, one request per roll
        stats.put("T", 10, 100)
        roll_for(stats, clock, 150)
    minute, hour, day = stats.windows(stats.topic_put["T"])
    assert minute.nums == 0  # nothing in the last minute
    assert hour.nums == 120 and hour.times == 12  # the last 30 min (the first burst is 2.5 h old)
    assert hour.snapshot() == (120, pytest.approx(120 / hour.elapsed), 10.0)
    assert 1800 <= hour.elapsed <= 3600
    assert day.nums == 220 and day.times == 14  # since the item appeared
    assert day.snapshot(of_bytes=True)[0] == 2200
    both = stats.windows([stats.topic_put["T"], stats.topic_put["T"]])
    assert both[2].nums == 440


def test_broker_stats_data_puts_each_window_in_its_field() -> None:
    import orjson

    from orbitmq.broker.processors.admin_stats import broker_stats_data
    from orbitmq.broker.stats import Window

    body = orjson.loads(
        broker_stats_data(
            (Window(6, 60, 2, 60.0), Window(36, 360, 4, 3600.0), Window(72, 720, 8, 7200.0)), False
        )
    )
    assert list(body) == ["statsDay", "statsHour", "statsMinute"]  # fastjson's alphabetical order
    assert body["statsMinute"] == {"avgpt": 3.0, "sum": 6, "tps": 0.1}
    assert body["statsHour"] == {"avgpt": 9.0, "sum": 36, "tps": 0.01}
    assert body["statsDay"] == {"avgpt": 9.0, "sum": 72, "tps": 0.01}
    sizes = orjson.loads(broker_stats_data((Window(6, 60, 2, 60.0),) * 3, True))
    assert sizes["statsMinute"] == {"avgpt": 30.0, "sum": 60, "tps": 1.0}
