"""Three minutes of client churn against a real broker (`python -m orbitmq.testing.churn`, the hour-long
run's short version): no resource of the broker grows after warm-up, no ERROR line in the servers' logs,
and every group consumed every acknowledged message of its topic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(480)]

SECONDS = 180
SERIES = {"rss_mib", "rss_anon_mib", "fds", "threads", "tasks", "connections"}


def test_three_minutes_of_churn(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    args = ["--seconds", str(SECONDS), "--seed", "38", "--warmup", "60", "--sample-interval", "3"]
    args += ["--workdir", str(tmp_path / "run"), "--keep", "--json", str(report_path)]
    run = subprocess.run(
        [sys.executable, "-m", "orbitmq.testing.churn", *args],
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    print(run.stdout)
    assert report_path.exists(), f"no report (exit {run.returncode})\n{run.stdout}\n{run.stderr[-3000:]}"
    report = json.loads(report_path.read_text())
    assert run.returncode == (1 if report["failures"] else 0), run.stderr[-3000:]
    # The load happened: sends acknowledged, members joined and left, pulls held, a slow consumer held.
    counts = report["counts"]
    assert report["sent"] >= SECONDS * 5, report["sent"]
    assert counts["consumer_joins"] > 100 and counts["consumer_leaves"] > 10, counts
    assert counts["producer_starts"] > 5 and counts["slow_held"] > 0, counts
    assert report["held_pulls_max"] > 50, report["held_pulls_max"]
    # The checks.
    assert report["owed"] == {}, report["owed"]
    assert report["log_errors"] == [], report["log_errors"]
    assert report["broker_exit"] is None
    assert set(report["trends"]) == SERIES
    grows = {name: t for name, t in report["trends"].items() if not t["ok"]}
    assert not grows, grows
    assert report["failures"] == []
