"""The build switch (orbitmq/native.py): which modules run, compiled or pure, is what it says.

`scripts/check` runs the protocol, store, message and client unit tests a second time with
ORBITMQ_PURE=1; `test_loaded_modules_match_the_mode` is part of both runs, so each run proves it
exercised the build it claims (the pure run imports no extension module of orbitmq).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq import native


def _loaded_from_extension(module: str) -> bool:
    return not (importlib.import_module(module).__file__ or "").endswith(".py")


def test_loaded_modules_match_the_mode() -> None:
    kinds = {m: _loaded_from_extension(m) for m in native.COMPILED_MODULES}
    if native.MODE == "compiled":
        assert all(kinds.values()), kinds
    else:
        assert not any(kinds.values()), kinds
    if os.environ.get(native.PURE_ENV, "") not in ("", "0"):
        assert native.MODE == "pure"


def _version(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "orbitmq", "--version"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip()


def test_version_says_which_build_runs() -> None:
    assert "pure" in _version({native.PURE_ENV: "1"})
    built = all(native._extension(m) is not None for m in native.COMPILED_MODULES)
    default = _version({native.PURE_ENV: ""})
    if not built:
        pytest.skip("no compiled build here (mypyc or a C compiler missing): only the pure mode exists")
    # a build exists: without the switch it is used, unless a source was edited after it
    stale = "newer than its compiled module" in default
    build = default.split()[2]  # "orbitmq <version> compiled|pure (...)"
    assert (build == "compiled") != stale, default


def test_staleness_is_judged_only_in_a_source_checkout(tmp_path: Path) -> None:
    """pip writes an installed wheel's files in any order: their times must not force pure Python."""
    checkout = tmp_path / "repo"
    (checkout / "src").mkdir(parents=True)
    (checkout / "setup.py").write_text("")
    assert native.in_source_checkout(str(checkout / "src"))
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    assert not native.in_source_checkout(str(site))
