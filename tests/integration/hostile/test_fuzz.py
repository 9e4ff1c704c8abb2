"""The fuzz driver's short run (issue 13 point 7): hostile frames, bodies and request sequences against a
real `orbitmq serve` while a healthy producer/consumer pair runs. No crash, no file outside the store,
every acknowledged message consumed, no healthy request failed. (Latency is reported, not asserted:
`python -m orbitmq.testing.fuzz` checks the p99 and the long run's figures are in the notes.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.testing.fuzz import run_fuzz


@pytest.mark.slow
def test_short_fuzz_run(tmp_path: Path) -> None:
    report = run_fuzz(
        seconds=3.0, max_frames=3000, workers=2, seed=11, baseline_seconds=1.0, workdir=tmp_path
    )
    assert report.frames_sent > 100, report
    assert len(report.cases) >= 5, report.cases
    assert report.server_alive, report
    assert report.escaped == [], report.escaped
    assert report.healthy_sent > 0
    assert report.lost == 0, report
    assert report.healthy_send_errors == 0 and report.route_errors == 0, report
    # the checks above can fail: the same report shape flags a loss as a problem
    assert [p for p in report.problems() if "p99" not in p] == []
