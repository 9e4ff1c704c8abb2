"""`orbitmq bench --help` points to BENCHMARKS.md: the file is in the repository and covers every
workload the verb accepts, the peers, how to read the table and a measured table."""

from __future__ import annotations

import re
from pathlib import Path

from orbitmq.bench.options import build_parser

ROOT = Path(__file__).resolve().parents[3]


def test_help_points_to_a_benchmarks_file_that_exists() -> None:
    help_text = build_parser().format_help()
    assert "BENCHMARKS.md" in help_text and "bench/README.md" in help_text
    assert (ROOT / "BENCHMARKS.md").is_file() and (ROOT / "bench" / "README.md").is_file()


def test_benchmarks_covers_workloads_peers_reading_and_figures() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    for section in ("## Workloads", "## Peers", "## Reading the table", "## Latest measured figures"):
        assert section in text
    workloads = set(re.findall(r"^\| (W\d+)\b", text, flags=re.MULTILINE))
    assert workloads >= {f"W{i}" for i in range(1, 11)}
    # a measured W1 row: the client's rate, and the raw driver's when that run had one ("client / raw")
    assert re.search(r"^\| W1, 1 sender \| [\d,]+( / [\d,]+)? \|", text, flags=re.MULTILINE)
