"""Replication lag statistics (W6): offsets read from GET_BROKER_RUNTIME_INFO tables, the active window
of a sample series, and the summary in bytes and milliseconds."""

from __future__ import annotations

import math

import pytest

from orbitmq.bench.lag import LagSample, active_window, commit_log_max_offset, summarize_lag
from orbitmq.bench.replication import pick_group


def test_offset_from_a_runtime_info_table_or_body() -> None:
    assert commit_log_max_offset({"commitLogMaxOffset": "4096", "brokerRole": "SLAVE"}) == 4096
    assert commit_log_max_offset({"table": {"commitLogMaxOffset": "17"}}) == 17
    with pytest.raises(ValueError, match="commitLogMaxOffset"):
        commit_log_max_offset({"brokerRole": "SLAVE"})
    with pytest.raises(ValueError, match="not an integer"):
        commit_log_max_offset({"commitLogMaxOffset": "x"})


def test_a_slave_read_ahead_of_its_master_counts_as_no_lag() -> None:
    assert LagSample(0.0, 100, 150).lag_bytes == 0
    assert LagSample(0.0, 150, 100).lag_bytes == 50


def test_idle_samples_before_and_after_the_load_are_left_out() -> None:
    samples = [
        LagSample(0.0, 0, 0),  # topic creation: idle
        LagSample(0.1, 0, 0),
        LagSample(0.2, 1000, 600),  # load
        LagSample(0.3, 2000, 1900),
        LagSample(0.4, 3000, 2000),
        LagSample(0.5, 3000, 3000),  # load stopped, the slave catches up
    ]
    window = active_window(samples)
    assert [s.t for s in window] == [0.2, 0.3, 0.4]
    summary = summarize_lag(samples)
    assert summary.samples == 3
    assert summary.mean_bytes == pytest.approx((400 + 100 + 1000) / 3)
    assert summary.max_bytes == 1000
    assert summary.p99_bytes == 1000  # nearest rank over 3 samples
    assert summary.bytes_per_s == pytest.approx(2000 / 0.2)
    assert summary.mean_ms == pytest.approx(500 / 10_000 * 1000)
    assert summary.max_ms == pytest.approx(100.0)
    extra = summary.extra()
    assert extra["lag_max_bytes"] == 1000 and extra["lag_samples"] == 3
    assert "KB" in summary.describe() and "3 samples" in summary.describe()


def test_p99_over_many_samples_ignores_the_single_worst() -> None:
    samples = [LagSample(i / 10, 1000 * i, 1000 * i - (50_000 if i == 150 else 100)) for i in range(1, 201)]
    summary = summarize_lag(samples)
    assert summary.p99_bytes == 100
    assert summary.max_bytes == 50_000


def test_no_samples_and_no_movement() -> None:
    empty = summarize_lag([])
    assert empty.samples == 0 and math.isnan(empty.mean_bytes)
    assert empty.describe() == "replication lag: no samples"
    idle = summarize_lag([LagSample(0.0, 500, 400), LagSample(0.1, 500, 500)])
    assert idle.samples == 2 and idle.max_bytes == 100
    assert idle.bytes_per_s == 0 and math.isnan(idle.mean_ms)  # no writes: bytes cannot become time


def test_pick_group_prefers_a_group_with_a_slave() -> None:
    info = {
        "brokerAddrTable": {
            "broker-a": {"brokerName": "broker-a", "brokerAddrs": {"0": "127.0.0.1:1"}},
            "broker-b": {"brokerName": "broker-b", "brokerAddrs": {"0": "127.0.0.1:3", "2": "127.0.0.1:5"}},
            "broker-c": {"brokerName": "broker-c", "brokerAddrs": {"1": "127.0.0.1:7"}},
        }
    }
    pair = pick_group(info)
    assert pair is not None
    assert (pair.broker_name, pair.master, pair.slave) == ("broker-b", "127.0.0.1:3", "127.0.0.1:5")
    del info["brokerAddrTable"]["broker-b"]
    alone = pick_group(info)
    assert alone is not None and (alone.broker_name, alone.slave) == ("broker-a", None)
    assert pick_group({"brokerAddrTable": {}}) is None
