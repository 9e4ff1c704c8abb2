"""Run a real `orbitmq console` process for a test and read its URL back from its first stdout line."""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence


@contextlib.contextmanager
def console_process(
    namesrv: str,
    extra_args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> Iterator[str]:
    """`orbitmq console -n NAMESRV --port 0 [extra_args]`; yields `http://127.0.0.1:PORT/`, stops it after."""
    child_env = dict(os.environ)
    child_env.update(env or {})
    proc = subprocess.Popen(
        [sys.executable, "-m", "orbitmq", "console", "-n", namesrv, "--port", "0", *extra_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            if not selector.select(timeout=timeout):
                raise AssertionError(f"orbitmq console printed no address within {timeout}s")
        line = proc.stdout.readline().strip()
        if not line.startswith("console listening on http://"):
            raise AssertionError(f"unexpected first line from orbitmq console: {line!r}")
        yield line.split()[-1]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
