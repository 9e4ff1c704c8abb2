"""The bench's peer drivers ship inside the package: found through importlib.resources, not the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import orbitmq
from orbitmq.bench.peers import KNOWN_PEERS, default_peers_dir, load_peer, packaged_peers_dir


def test_the_default_drivers_are_the_packaged_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORBITMQ_BENCH_PEERS", raising=False)
    package = Path(orbitmq.__file__).resolve().parent
    assert default_peers_dir() == packaged_peers_dir()
    assert packaged_peers_dir().resolve() == package / "bench" / "peer_drivers"
    for name in KNOWN_PEERS:
        module = load_peer(name, default_peers_dir())
        assert name == module.NAME


def test_an_environment_directory_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ORBITMQ_BENCH_PEERS", str(tmp_path))
    assert default_peers_dir() == tmp_path
    with pytest.raises(FileNotFoundError, match="no peer driver"):
        load_peer("redis", default_peers_dir())


def test_drivers_load_from_a_copy_of_the_package_outside_the_checkout(tmp_path: Path) -> None:
    # The package alone, as a wheel installs it: no bench/ directory beside it, no setup.py above it.
    site = tmp_path / "site-packages"
    shutil.copytree(
        Path(orbitmq.__file__).resolve().parent,
        site / "orbitmq",
        ignore=shutil.ignore_patterns("__pycache__", "*.so"),
    )
    script = (
        "import orbitmq.bench.peers as p\n"
        "d = p.default_peers_dir()\n"
        "print(d)\n"
        "print(','.join(p.load_peer(n, d).NAME for n in p.KNOWN_PEERS))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ORBITMQ_BENCH_PEERS"}
    env["PYTHONPATH"] = str(site)
    env["ORBITMQ_PURE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split()
    assert Path(out[0]).resolve() == (site / "orbitmq" / "bench" / "peer_drivers").resolve()
    assert out[1] == ",".join(KNOWN_PEERS)
