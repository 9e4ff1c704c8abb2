"""The README's Python code blocks, run as a newcomer runs them: against a real `orbitmq serve`.

Every ```python block of README.md that does not use Spark (the Spark quick start lives in
docs/spark.md and runs in tests/spark/test_readme_spark.py) is written to a file, the documented address
127.0.0.1:9876 replaced by the test server's, and run in a fresh interpreter. The quick start is run
twice against the same server: a correct example commits its offsets, so the second run consumes exactly
its own five messages (an example that exits without shutting the consumer down receives the first
run's again).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq.testing import start_serve

README = Path(__file__).resolve().parents[2] / "README.md"
DOCUMENTED_NAMESRV = "127.0.0.1:9876"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def non_spark_blocks() -> list[str]:
    return [block for block in python_blocks(README.read_text(encoding="utf-8")) if "spark" not in block]


def run_block(code: str, namesrv: str, workdir: Path, name: str) -> str:
    script = workdir / f"{name}.py"
    script.write_text(code.replace(DOCUMENTED_NAMESRV, namesrv), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=120, cwd=workdir
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_readme_has_the_quick_start_block() -> None:
    blocks = non_spark_blocks()
    assert len(blocks) == 1
    assert DOCUMENTED_NAMESRV in blocks[0] and "consumer.shutdown()" in blocks[0]


@pytest.mark.slow
def test_readme_quick_start_runs_and_commits_offsets(tmp_path: Path) -> None:
    (block,) = non_spark_blocks()
    server = start_serve(tmp_path / "serve")
    try:
        for run in (1, 2):
            out = run_block(block, server.address, tmp_path, f"quickstart{run}")
            sent = re.findall(r"^sent SEND_OK (\S+)$", out, flags=re.MULTILINE)
            received = re.findall(r"^received orders created (.+)$", out, flags=re.MULTILINE)
            assert len(sent) == 5, out
            # exactly this run's five, each once: the first run's offsets were committed at shutdown
            assert sorted(received) == [f"order {i}" for i in range(5)], out
            assert out.rstrip().endswith("consumed 5 messages"), out
    finally:
        server.stop()
