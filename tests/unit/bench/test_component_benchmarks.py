"""Every benchmark lives in orbitmq.bench and runs as a verb of `orbitmq bench`; the repository's bench/
directory keeps only the peers' installer and the README (the peer drivers ship in the package)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from orbitmq.bench.cli import SCRIPTS, main
from orbitmq.bench.spark_workload import SCRIPT_MODULE, default_script

ROOT = Path(__file__).resolve().parents[3]


def test_codec_verb_runs_and_reports_each_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codec", "--count", "200", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    for name in ("pack_record_into", "decode_records", "scan_record", "unpack_record_header", "feed+decode"):
        assert name in out


@pytest.mark.parametrize("verb", sorted(set(SCRIPTS) - {"spark"}))  # spark_bench imports pyspark
def test_each_verb_has_help(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([verb, "--help"])
    assert exc.value.code == 0
    assert f"orbitmq bench {verb}" in capsys.readouterr().out


def test_every_script_module_takes_argv() -> None:
    for verb, module in SCRIPTS.items():
        path = ROOT / "src" / Path(*module.split(".")).with_suffix(".py")
        assert path.is_file(), verb
        if verb != "spark":
            assert "argv" in inspect.signature(importlib.import_module(module).main).parameters


def test_w7_runs_the_packaged_spark_script() -> None:
    assert default_script().is_file()
    assert SCRIPTS["spark"] == SCRIPT_MODULE


def test_bench_directory_holds_no_benchmark_code() -> None:
    """One place for benchmarks: no Python in the repository's bench/, only the peers' installer."""
    stray = [p.name for p in (ROOT / "bench").rglob("*.py")]
    assert stray == [], f"move these into src/orbitmq/bench and make them `orbitmq bench` verbs: {stray}"
    assert (ROOT / "bench" / "peers" / "install.sh").is_file()
