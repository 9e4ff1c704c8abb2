"""`orbitmq bench blocking` end to end against a real `orbitmq serve` (orbitmq only: redis-server is a
bench peer, not a test dependency)."""

from __future__ import annotations

import pytest

from orbitmq.bench.cli import main


def test_blocking_bench_runs_and_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["blocking", "--messages", "300", "--rounds", "2", "--no-redis"]) == 0
    out = capsys.readouterr().out
    assert "one thread, 300 sends of 1024 B per round, 2 rounds, medians" in out
    [row] = [line for line in out.splitlines() if line.startswith("orbitmq Producer")]
    assert float(row.split()[2].replace(",", "")) > 0  # the median rate


@pytest.mark.parametrize(
    ("options", "name", "heading"),
    [
        (["--orderly"], "orbitmq send_orderly", "one thread, 300 sends of 1024 B per round, 2 rounds"),
        (["--batch", "10"], "orbitmq send_batch(10)", "300 sends of 1024 B per round, 10 per call, 2 rounds"),
    ],
)
def test_orderly_and_batch_shapes_run(
    capsys: pytest.CaptureFixture[str], options: list[str], name: str, heading: str
) -> None:
    assert main(["blocking", "--messages", "300", "--rounds", "2", "--no-redis", *options]) == 0
    out = capsys.readouterr().out
    assert heading in out
    [row] = [line for line in out.splitlines() if line.startswith(name)]
    assert float(row.split()[len(name.split())].replace(",", "")) > 0  # the median rate
