"""Starting an embedded orbitmq for a bench run (`--serve`): a real `orbitmq serve` subprocess.

Uses orbitmq.testing.start_serve when it is available (the project's one way to start servers on port 0
and read the ports back); otherwise runs `python -m orbitmq serve --port 0` itself and reads the
"... listening on 127.0.0.1:PORT" lines. Either way the result is a `ServerHandle` stopped by PID.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orbitmq.bench.driver import DriverUnavailable, ServerHandle

LISTENING = re.compile(r"^(namesrv|broker \S+(?: ha)?) listening on (\S+)$")


def parse_listening(line: str) -> tuple[str, str] | None:
    """('namesrv' | 'broker' | 'ha', 'ip:port') for a server's "listening" line, else None."""
    match = LISTENING.match(line.strip())
    if match is None:
        return None
    who, address = match.groups()
    role = "namesrv" if who == "namesrv" else ("ha" if who.endswith(" ha") else "broker")
    return role, address


def start_orbitmq(
    workdir: Path,
    broker_conf: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    *,
    brokers: int = 1,
) -> ServerHandle:
    """Start `orbitmq serve` with its store in workdir; the handle's address is the namesrv's.
    `brokers` > 1 runs `serve --brokers N` (N broker processes, counted with their parent's CPU)."""
    extra_args = ["--brokers", str(brokers)] if brokers > 1 else []
    conf = dict(broker_conf or {})
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        testing = importlib.import_module("orbitmq.testing")
    except ImportError:  # pragma: no cover - the package always has it
        testing = None
    start_serve = getattr(testing, "start_serve", None)
    if start_serve is not None:
        server: Any = start_serve(workdir, extra_args=extra_args, timeout=max(timeout, 60.0), **conf)
        addresses: dict[str, str] = dict(server.addresses)
        return ServerHandle(
            "orbitmq",
            addresses["namesrv"],
            None,
            workdir,
            extra_pids=[int(server.pid)],
            stopper=server.stop,
            killer=server.kill,
        )
    return _start_subprocess(workdir, conf, timeout, extra_args)


def _start_subprocess(
    workdir: Path, conf: Mapping[str, str], timeout: float, extra_args: list[str]
) -> ServerHandle:
    args = [sys.executable, "-m", "orbitmq", "serve", "--port", "0", "--store", str(workdir / "store")]
    args += extra_args
    for key, value in conf.items():
        if key != "flushDiskType":
            raise DriverUnavailable(f"cannot pass broker property {key} without orbitmq.testing.start_serve")
        args += ["--flush-disk-type", str(value)]
    log = (workdir / "serve.log").open("wb")
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    handle = ServerHandle("orbitmq", "", proc, workdir)
    found: dict[str, str] = {}
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    stdout = proc.stdout
    # Read the listening lines with a deadline: a thread does the blocking reads.
    lines: list[str] = []
    done = threading.Event()

    def reader() -> None:
        for raw in stdout:
            text = raw.decode("utf-8", "replace")
            lines.append(text)
            parsed = parse_listening(text)
            if parsed is not None:
                found.setdefault(parsed[0], parsed[1])
            if "namesrv" in found and "broker" in found:
                done.set()
        done.set()

    threading.Thread(target=reader, name="serve-stdout", daemon=True).start()
    done.wait(max(0.0, deadline - time.monotonic()))
    if "namesrv" not in found or "broker" not in found:
        handle.stop()
        tail = "".join(lines[-5:]).strip() or (workdir / "serve.log").read_text(errors="replace")[-800:]
        raise DriverUnavailable(f"`orbitmq serve` did not report its ports within {timeout:.0f} s: {tail}")
    handle.address = found["namesrv"]
    return handle
