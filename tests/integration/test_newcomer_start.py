"""What a newcomer meets first when starting servers: the ops extra named before anything starts,
each `listening on` said once, `orbitmq --help` listing --version. Real processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq.testing import start_process

# Runs the orbitmq command as if the ops extra (prometheus_client, aiohttp) were not installed.
WITHOUT_OPS = """
import sys

class RefuseOps:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED:
            raise ImportError(f"No module named {name!r}")
        return None

REFUSED = sys.argv.pop(1).split(",")
sys.meta_path.insert(0, RefuseOps())
from orbitmq.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_without_ops(
    *args: str, cwd: Path, refused: str = "prometheus_client,aiohttp"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", WITHOUT_OPS, refused, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--port", "0", "--metrics-port", "0"],
        ["serve", "--port", "0", "--console-port", "0"],
        ["broker", "--port", "0", "--metrics-port", "0"],
        ["namesrv", "--port", "0", "--metrics-port", "0"],
        ["console", "--help"],
    ],
)
def test_missing_ops_extra_is_one_line_before_anything_starts(args: list[str], tmp_path: Path) -> None:
    if args[0] in ("serve", "broker"):
        args = [*args, "--store", str(tmp_path / "store")]
    done = run_without_ops(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # nothing announced: nothing started
    assert done.stderr.count("\n") == 1, done.stderr  # one line: no traceback, no "never awaited"
    assert "needs the ops extra" in done.stderr and "pip install 'orbitmq[ops]'" in done.stderr
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--port", "0", "--grpc-port", "0"],
        ["broker", "--port", "0", "-c", "grpc.conf"],
    ],
)
def test_missing_grpc_extra_is_one_line_before_anything_starts(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "grpc.conf").write_text("grpcServerPort=0\n")
    done = run_without_ops(*args, "--store", str(tmp_path / "store"), cwd=tmp_path, refused="grpc")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "needs the grpc extra" in done.stderr and "pip install 'orbitmq[grpc]'" in done.stderr
    assert not (tmp_path / "store").exists()


def test_the_same_command_runs_with_the_extra(tmp_path: Path) -> None:
    """Positive control for the simulation above: with the ops extra importable, the flag works."""
    server = start_process(
        "namesrv",
        ["--port", "0", "--metrics-port", "0"],
        tmp_path,
        name="ns",
        expect=("namesrv",),
        primary="namesrv",
    )
    assert server.stop() == 0
    assert "metrics listening on http://" in server.stdout_path.read_text()


def test_serve_says_each_listening_address_once(tmp_path: Path) -> None:
    server = start_process(
        "serve",
        ["--port", "0", "--store", str(tmp_path / "store"), "--metrics-port", "0"],
        tmp_path,
        name="serve",
        expect=("namesrv", "broker"),
        primary="namesrv",
    )
    assert server.stop() == 0
    both = server.stdout_path.read_text() + server.stderr_path.read_text()
    for what in ("namesrv listening on", "broker broker-a listening on", "metrics listening on"):
        assert both.count(what) == 1, both


def test_help_lists_version(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "orbitmq", "--help"], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    assert "--version" in done.stdout
    version = subprocess.run(
        [sys.executable, "-m", "orbitmq", "--version"],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert version.stdout.startswith("orbitmq ")
