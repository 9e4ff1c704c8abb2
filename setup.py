"""Build: the hot modules listed in src/orbitmq/native.py are compiled with mypyc when mypyc and a C
compiler are available; otherwise (or with ORBITMQ_PURE=1) orbitmq installs as pure Python, with a
one-line notice. The Python sources stay the one source of truth (see orbitmq/native.py).

Compiling takes minutes and pip hides a build's output unless run with -v, so each step is also
written to the terminal (/dev/tty) when there is one: the user sees what runs instead of a spinner."""

from __future__ import annotations

import os
import runpy
import sys
import time

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _progress(line: str) -> None:
    """One line to the build log and, when there is one, to the user's terminal past pip's capture."""
    print(f"orbitmq: {line}", file=sys.stderr, flush=True)
    try:
        with open("/dev/tty", "w", encoding="utf-8") as tty:
            tty.write(f"orbitmq: {line}\n")
    except OSError:  # no controlling terminal (CI, containers): the build log has it
        pass


def _notice(reason: str) -> None:
    _progress(f"installing pure Python ({reason})")


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
        group = "__mypyc" in ext.name  # the one large C file of all the modules; the rest are shims
        if group:
            _progress(f"C compiler: {ext.name}, the generated C of every module (the longest step) ...")
        elif not getattr(self, "_shims_announced", False):
            self._shims_announced = True
            _progress(f"C compiler: the {len(self.extensions) - 1} modules' import shims ...")
        started = time.monotonic()
        try:
            super().build_extension(ext)
        except Exception as exc:
            _notice(f"compiling {ext.name} failed: {exc}")
            return
        if group:
            _progress(f"C compiler: {ext.name} done in {time.monotonic() - started:.0f} s")


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
    _progress(
        f"compiling {len(paths)} modules with mypyc: a few minutes, most of them in the C compiler "
        "(ORBITMQ_PURE=1 installs pure Python at once)"
    )
    started = time.monotonic()
    try:
        extensions = list(mypycify(paths, opt_level="3", group_name="orbitmq_native"))
    except BaseException as exc:  # mypyc exits (SystemExit) on a type error
        _notice(f"mypyc failed: {exc}")
        return []
    _progress(f"mypyc type-checked and translated them to C in {time.monotonic() - started:.0f} s")
    return extensions


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
