"""`orbitmq serve` loads only what serving needs before it serves (W10, cold start ≤ 0.5 s): not the
admin CLI, the client library, the bench, Spark, the console's web app, YAML (read only with
aclEnable=true) or the SQL92 parser (loaded by the first SQL92 subscription).

A real `orbitmq serve` process records its sys.modules at the moment it announces its listeners.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# Runs `orbitmq serve` as the command line does, after wrapping the function that prints the
# "listening" lines so that it first writes the loaded modules to the file named by argv[1].
RECORDER = """
import sys
from orbitmq.transport import loop

announce = loop.wait_for_stop_signal

async def recording(lines, *rest):
    with open(sys.argv[1], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    return await announce(lines, *rest)

loop.wait_for_stop_signal = recording
from orbitmq.cli import main
sys.exit(main(["serve", "--port", "0", "--store", sys.argv[2]]))
"""

NOT_AT_START = (
    "orbitmq.admin",
    "orbitmq.client",
    "orbitmq.bench",
    "orbitmq.spark",
    "orbitmq.console.main",
    "orbitmq.console.app",
    "orbitmq.protocol.sql92",
    "orbitmq.protocol.sql92_lexer",
    "orbitmq.protocol.sql92_parser",
    "orbitmq.protocol.sql92_tree",
    "orbitmq.protocol.sql92_values",
    "yaml",
    "rich",
)


def test_serve_does_not_import_what_serving_does_not_need(tmp_path: Path) -> None:
    modules_file = tmp_path / "modules.txt"
    proc = subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(modules_file), str(tmp_path / "store")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().decode()
        assert first.startswith("namesrv listening on"), first
        deadline = time.monotonic() + 10
        while not modules_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        loaded = modules_file.read_text().split()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    # Positive control: the snapshot is of a process that loaded the broker and the nameserver.
    assert "orbitmq.broker.app" in loaded and "orbitmq.namesrv.app" in loaded
    found = [m for m in loaded if any(m == p or m.startswith(p + ".") for p in NOT_AT_START)]
    assert found == [], f"imported before serving: {found}"
