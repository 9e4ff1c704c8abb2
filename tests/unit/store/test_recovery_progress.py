"""Recovery reports its progress per segment (scan, then dispatch) and the default reporter logs a
line every 10 % or every few seconds for a large store; the recovered store is the same with or without
a listener."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from orbitmq.common.clock import FakeClock
from orbitmq.store import MessageStore
from orbitmq.store.recovery_progress import LoggingProgress, RecoveryStep

from .conftest import make_message, small_config


def crashed_store(root: Path, messages: int) -> list[int]:
    clock = FakeClock()
    store = MessageStore(small_config(root), clock=clock)
    store.load()
    store.start()
    for i in range(messages):
        store.put_message(make_message(queue_id=i % 3, body=b"x" * 600, keys=f"k{i}"))
        clock.advance(0.01)
    counts = [store.get_max_offset_in_queue("TopicTest", q) for q in range(3)]
    store.abort()
    shutil.rmtree(root / "consumequeue")  # everything must be rebuilt by the dispatch phase
    return counts


def test_recovery_reports_each_segment_and_recovers_the_same(tmp_path: Path) -> None:
    expected = crashed_store(tmp_path, 500)  # ~5 segments of 64 KiB
    steps: list[RecoveryStep] = []
    store = MessageStore(small_config(tmp_path), clock=FakeClock(), recovery_progress=steps.append)
    store.load()
    try:
        assert not store.last_exit_ok
        assert [store.get_max_offset_in_queue("TopicTest", q) for q in range(3)] == expected
    finally:
        store.shutdown()
    for phase in ("scan", "dispatch"):
        mine = [s for s in steps if s.phase == phase]
        assert len(mine) >= 4, steps  # one report per segment
        assert [s.done for s in mine] == sorted(s.done for s in mine)
        assert mine[-1].fraction == 1.0
        assert [s.total for s in mine] == sorted((s.total for s in mine), reverse=True)
    assert steps.index(next(s for s in steps if s.phase == "dispatch")) > max(
        i for i, s in enumerate(steps) if s.phase == "scan"
    )


def test_the_scan_reports_the_bytes_it_checked_not_the_segment_size(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crashed_store(tmp_path, 3)  # about 2 KB of records in a 64 KiB segment
    steps: list[RecoveryStep] = []
    store = MessageStore(small_config(tmp_path), clock=FakeClock(), recovery_progress=steps.append)
    store.load()
    try:
        written = store.commit_log.max_offset
    finally:
        store.shutdown()
    scan = [s for s in steps if s.phase == "scan"]
    assert 0 < written < 4096
    assert (scan[-1].done, scan[-1].total) == (written, written)
    # the default reporter stays silent for it even when its threshold is below the segment size
    caplog.clear()
    caplog.set_level(logging.INFO, logger="orbitmq.store.recovery")
    reporter = LoggingProgress("/s", lambda: 0.0, min_bytes=8192)
    for step in steps:
        reporter(step)
    assert not [r for r in caplog.records if r.name == "orbitmq.store.recovery"]


def test_logging_progress_every_tenth_or_every_few_seconds(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    reporter = LoggingProgress("/s", lambda: now[0], min_bytes=1000, every_fraction=0.10, every_seconds=5.0)
    caplog.set_level(logging.INFO, logger="orbitmq.store.recovery")
    total = 100_000
    for done in range(1000, total + 1, 1000):  # 1 % steps, no time passing: a line per 10 %
        reporter(RecoveryStep("scan", done, total))
    assert len(caplog.records) == 10
    assert "checking commit log records 100%" in caplog.records[-1].getMessage()
    caplog.clear()
    reporter(RecoveryStep("dispatch", 1000, total))  # new phase, 1 %: not yet
    now[0] = 6.0
    reporter(RecoveryStep("dispatch", 2000, total))  # 2 % but 6 s later: a line
    assert [r.getMessage() for r in caplog.records] == [
        "store /s recovery: rebuilding consume queues and index   2% (0 of 0 MiB)"
    ]
    caplog.clear()
    reporter(RecoveryStep("scan", 10, 500))  # small store: silent
    assert not caplog.records
