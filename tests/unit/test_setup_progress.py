"""`pip install .` compiles for minutes: setup.py says what it compiles before it starts, instead of
leaving the user with pip's spinner. Runs setup.py with a stand-in mypyc (the real one takes minutes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from orbitmq.native import COMPILED_MODULES

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = "def mypycify(paths, **options):\n    return []\n"


def run_setup(
    tmp_path: Path, *args: str, stand_in: str = STAND_IN, **env: str
) -> subprocess.CompletedProcess[str]:
    """`python setup.py ARGS` (default --name) with `stand_in` as mypyc.build on the path."""
    (tmp_path / "mypyc").mkdir(exist_ok=True)
    (tmp_path / "mypyc" / "__init__.py").write_text("")
    (tmp_path / "mypyc" / "build.py").write_text(stand_in)
    (tmp_path / "mypyc" / "probe.c").write_text("int probe(void) { return 0; }\n")
    environ = {k: v for k, v in os.environ.items() if k != "ORBITMQ_PURE"}
    environ.update(PYTHONPATH=str(tmp_path), **env)
    return subprocess.run(
        [sys.executable, "setup.py", *(args or ["--name"])],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # no controlling terminal: the progress lines go to stderr only
    )


def test_setup_says_what_it_compiles_and_how_to_skip_it(tmp_path: Path) -> None:
    done = run_setup(tmp_path)
    expected = f"orbitmq: compiling {len(COMPILED_MODULES)} modules with mypyc: a few minutes"
    assert expected in done.stderr, done.stderr
    assert "ORBITMQ_PURE=1" in done.stderr
    assert "translated them to C in" in done.stderr


# A stand-in whose "group" and "shim" are two tiny real C extensions, to see build_ext's progress lines.
STAND_IN_WITH_C = """
import os
from setuptools import Extension

def mypycify(paths, **options):
    here = os.path.dirname(os.path.abspath(__file__))
    return [
        Extension("orbitmq_probe__mypyc", [os.path.join(here, "probe.c")]),
        Extension("orbitmq_probe_shim", [os.path.join(here, "probe.c")]),
    ]
"""


def test_build_says_which_c_compile_runs_and_how_long_it_took(tmp_path: Path) -> None:
    build = ["-q", "build_ext", "-b", str(tmp_path / "lib"), "-t", str(tmp_path / "tmp")]
    done = run_setup(tmp_path, *build, stand_in=STAND_IN_WITH_C)
    err = done.stderr
    assert "orbitmq: C compiler: orbitmq_probe__mypyc, the generated C of every module" in err, err
    assert "orbitmq: C compiler: orbitmq_probe__mypyc done in" in err
    assert "orbitmq: C compiler: the 1 modules' import shims" in err
    assert err.index("done in") < err.index("import shims")  # in build order, each announced once


def test_pure_build_says_so_and_compiles_nothing(tmp_path: Path) -> None:
    done = run_setup(tmp_path, ORBITMQ_PURE="1")
    assert "orbitmq: installing pure Python (ORBITMQ_PURE is set)" in done.stderr, done.stderr
    assert "with mypyc" not in done.stderr
