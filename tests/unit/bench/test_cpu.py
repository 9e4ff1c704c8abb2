"""Parsing /proc text for CPU and RSS accounting (orbitmq.bench.cpu), plus one read of our own process."""

from __future__ import annotations

import os
import sys

import pytest

from orbitmq.bench.cpu import (
    ProcessCpu,
    cores_used,
    cpu_seconds,
    parse_stat_cpu_ticks,
    parse_stat_ppid,
    parse_status_kib,
    parse_status_rss_kib,
    rss_split_mib,
)

# A real /proc/<pid>/stat line shape, with a command name containing spaces and a ')'.
STAT = "4242 (python (x) y) S 17 4242 17 34816 4242 4194304 2000 0 1 0 250 75 3 4 20 0 3 0 123 456 789"


def test_utime_plus_stime_counted_after_the_last_parenthesis() -> None:
    assert parse_stat_cpu_ticks(STAT) == 250 + 75
    assert parse_stat_ppid(STAT) == 17


def test_garbage_stat_is_rejected() -> None:
    with pytest.raises(ValueError):
        parse_stat_cpu_ticks("no parenthesis here")
    with pytest.raises(ValueError):
        parse_stat_cpu_ticks("1 (x) S 2 3")


def test_rss_from_status() -> None:
    text = "Name:\tpython\nVmPeak:\t  100 kB\nVmRSS:\t   51200 kB\nThreads:\t3\n"
    assert parse_status_rss_kib(text) == 51200
    assert parse_status_rss_kib("Name:\tkthreadd\n") is None


def test_rss_split_into_anonymous_and_mapped_files() -> None:
    text = "VmRSS:\t   3072 kB\nRssAnon:\t    1024 kB\nRssFile:\t    2048 kB\nRssShmem:\t 0 kB\n"
    assert (parse_status_kib(text, "RssAnon"), parse_status_kib(text, "RssFile")) == (1024, 2048)
    assert parse_status_kib(text, "RssShmemX") is None
    split = rss_split_mib(os.getpid())
    assert split is not None and split[0] > 0  # this process has anonymous memory


def test_cores_used() -> None:
    assert cores_used(1.5, 3.0) == 0.5
    assert cores_used(1.0, 0.0) == 0.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux only")
def test_own_process_cpu_is_readable_and_grows() -> None:
    before = cpu_seconds(os.getpid())
    assert before is not None
    sum(i * i for i in range(300_000))  # burn a little CPU (no sleeping)
    acct = ProcessCpu([os.getpid()], include_descendants=False)
    a = acct.snapshot()
    sum(i * i for i in range(300_000))
    b = acct.snapshot()
    assert a.seconds is not None and b.seconds is not None
    assert b.seconds >= a.seconds >= before
    cores = ProcessCpu.delta_cores(a, b, 1.0)
    assert cores is not None and cores >= 0.0


def test_unknown_pid_reads_as_none() -> None:
    acct = ProcessCpu([2**22 + 12345], include_descendants=False)
    snap = acct.snapshot()
    assert snap.seconds is None
    assert ProcessCpu.delta_cores(snap, snap, 1.0) is None


def test_schedstat_wait_is_the_second_field() -> None:
    from orbitmq.bench.cpu import parse_schedstat_wait_ns

    assert parse_schedstat_wait_ns("10656756958 8147401133 32223\n") == 8147401133
    with pytest.raises(ValueError):
        parse_schedstat_wait_ns("")


@pytest.mark.skipif(not os.path.exists("/proc/self/schedstat"), reason="needs /proc schedstat")
def test_wait_fraction_of_a_live_process_is_a_share_of_the_window() -> None:
    from orbitmq.bench.cpu import ProcessCpu

    cpu = ProcessCpu([os.getpid()], include_descendants=False)
    before = cpu.snapshot()
    sum(range(200_000))
    after = cpu.snapshot()
    share = ProcessCpu.max_wait_fraction(before, after, 1.0)
    assert share is not None and 0.0 <= share <= 1.0
