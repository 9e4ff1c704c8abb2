"""Build: the hot modules listed in src/orbitmq/native.py are compiled with mypyc when mypyc and a C
compiler are available; otherwise (or with ORBITMQ_PURE=1) orbitmq installs as pure Python, with a
one-line notice. The Python sources stay the one source of truth (see orbitmq/native.py)."""

from __future__ import annotations

import os
import runpy
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _notice(reason: str) -> None:
    print(f"orbitmq: installing pure Python ({reason})", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """A failed C build is not a failed install: the package falls back to pure Python."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            _notice(f"compiling failed: {exc}")
            return
        # orbitmq/native.py treats an extension older than its source as stale; a re-build that reuses
        # cached objects copies them with their old times, so mark them as made now.
        for ext in self.extensions:
            path = self.get_ext_fullpath(ext.name)
            if os.path.exists(path):
                os.utime(path)

    def build_extension(self, ext):  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:
            _notice(f"compiling {ext.name} failed: {exc}")


def _ext_modules() -> list[object]:
    if os.environ.get("ORBITMQ_PURE", "") not in ("", "0"):
        _notice("ORBITMQ_PURE is set")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _notice("mypyc is not installed")
        return []
    names = runpy.run_path(os.path.join(HERE, "src", "orbitmq", "native.py"), run_name="orbitmq_native")[
        "COMPILED_MODULES"
    ]
    paths = [os.path.join("src", *name.split(".")) + ".py" for name in names]
    try:
        return list(mypycify(paths, opt_level="3", group_name="orbitmq_native"))
    except BaseException as exc:  # mypyc exits (SystemExit) on a type error
        _notice(f"mypyc failed: {exc}")
        return []


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
