"""W7: the Spark connector's throughput, measured by `orbitmq bench spark` (spark_bench.py) run as a
subprocess, its rows turned into `Measurement`s for the harness table.

The script starts its own `orbitmq serve`; it needs pyspark and a Java runtime, and W7 is skipped with
a clear message when either is missing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import os
import re
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from orbitmq.bench.cpu import cpu_seconds, descendants
from orbitmq.bench.progress import Progress
from orbitmq.bench.result import Measurement
from orbitmq.bench.stats import LatencySummary

SYSTEM = "orbitmq-spark"
ROW = re.compile(
    r"^(?P<path>\S.*?)\s+(?P<rate>\d[\d,]*(?:\.\d+)?)\s+(?P<ratio>\d+(?:\.\d+)?|-)(?:\s{2,}(?P<note>.*?))?\s*$"
)
TITLE = re.compile(r"([\d,]+) messages of (\d+) B")


@dataclass(frozen=True, slots=True)
class SparkRow:
    path: str
    rows_per_s: float
    printed_ratio: float | None
    note: str

    @property
    def is_ceiling(self) -> bool:
        return self.path.lower().startswith("arrow ceiling")


SCRIPT_MODULE = "orbitmq.bench.spark_bench"


def default_script() -> Path:
    return Path(__file__).with_name("spark_bench.py")


def find_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def unavailable_reason(script: Path) -> str | None:
    """Why W7 cannot run here (None when it can)."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install pyspark)"
    if find_java() is None:
        return "no Java runtime (java not on PATH and no JAVA_HOME): Spark needs one"
    if not script.is_file():
        return f"{script} not found (W7 runs the Spark bench script, orbitmq.bench.spark_bench)"
    return None


def parse_spark_table(text: str) -> list[SparkRow]:
    """The rows of spark_bench.py's printed table (it has no machine-readable output): only lines after
    the header that holds "rows/s", shaped `<path> <rows/s> <x ceiling|-> [note]`, are rows; anything else
    (Spark's own chatter) is ignored. The ratio to the Arrow ceiling is recomputed from the parsed rates
    (the script's own column is the fallback).
    """
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if "rows/s" in line and "path" in line), None)
    body = lines[header + 1 :] if header is not None else lines
    rows: list[SparkRow] = []
    for line in body:
        match = ROW.match(line)
        if match is None:
            continue
        try:
            rate = float(match["rate"].replace(",", ""))
        except ValueError:
            continue
        ratio = None if match["ratio"] == "-" else float(match["ratio"])
        rows.append(SparkRow(match["path"].strip(), rate, ratio, (match["note"] or "").strip()))
    return rows


def parse_message_count(text: str) -> int | None:
    """N from the script's title line ("... 200,000 messages of 1024 B ..."), if there is one."""
    match = TITLE.search(text)
    return int(match.group(1).replace(",", "")) if match else None


def ceiling_rate(rows: list[SparkRow]) -> float | None:
    """The read Arrow ceiling of the run: its warm row when there is one, else its last row."""
    ceilings = [r for r in rows if r.is_ceiling and r.rows_per_s > 0]
    if not ceilings:
        return None
    warm = [r for r in ceilings if _label(r.note) == "warm"]  # not the "warm-up run"
    return (warm or ceilings)[-1].rows_per_s


LATENCY = re.compile(r"latency p50 (\d+(?:\.\d+)?) ms p99 (\d+(?:\.\d+)?) ms over ([\d,]+) rows")
# A row measured over another count than the run's N (the first writes' ~20k-row sample, the latency
# row's window) says so in its note; spark_latency.ROWS_MEASURED (not imported: that module needs pyspark).
ROWS_MEASURED = re.compile(r"(?:^|;\s*)(\d[\d,]*) rows measured\b")
_NOT_A_LABEL = ("wall", "latency", "runq")


def _label(note: str) -> str:
    """The note's first `;` segment when it names the run ("warm", "body only"), else ""."""
    first = note.split(";", maxsplit=1)[0].strip()
    return "" if not first or first.startswith(_NOT_A_LABEL) else first


def to_measurements(rows: list[SparkRow], messages: int, body_size: int) -> list[Measurement]:
    """One Measurement per row: msgs/s is the row's rows/s, and the note says its ratio to the ceiling.

    The ratio is the one the script printed (it knows which ceiling a row compares with: reads with
    the read ceiling, writes with the writer ceiling of the same columns); recomputed against the read
    ceiling only when the script printed none. The streaming row's latency goes into `latency`."""
    ceiling = ceiling_rate(rows)
    # A script that prints ratios decides which rows have one (not the setup or the latency row).
    printed = any(r.printed_ratio is not None for r in rows)
    out: list[Measurement] = []
    seen: dict[str, int] = {}
    for row in rows:
        label = _label(row.note)
        case = f"{row.path} ({label})" if label else row.path
        seen[case] = seen.get(case, 0) + 1
        if seen[case] > 1:  # the interleaved rounds repeat a row
            case = f"{case} #{seen[case]}"
        m = Measurement("W7", case, SYSTEM, body_size=body_size)
        latency = LATENCY.search(row.note)
        if latency:
            p50, p99, count = float(latency[1]), float(latency[2]), int(latency[3].replace(",", ""))
            m.latency = LatencySummary(count, math.nan, p50 * 1000, p99 * 1000, math.nan)
        counted = ROWS_MEASURED.search(row.note)
        count = int(counted[1].replace(",", "")) if counted else messages
        if row.rows_per_s > 0 and count > 0:
            m.messages = count
            m.seconds = count / row.rows_per_s
        ratio = row.printed_ratio
        if ratio is None and ceiling and not printed and not latency:
            ratio = row.rows_per_s / ceiling
        notes = []
        if ratio is not None and math.isfinite(ratio):
            m.extra["ceiling_ratio"] = ratio
            if row.path.startswith(("batch write", "arrow writer")):
                which = "Arrow writer ceiling"
            elif row.path.startswith(("availableNow", "arrow stream ceiling")):
                which = "Arrow stream ceiling"  # (the script falls back to the read ceiling without it)
            else:
                which = "Arrow ceiling"
            notes.append(f"{ratio:.2f}x the {which} of this run")
        m.extra["rows_per_s"] = row.rows_per_s
        rest = row.note[len(label) :].lstrip(" ;") if label else row.note
        if rest:
            notes.append(rest)
        m.note = "; ".join(notes)
        out.append(m)
    return out


class TreeCpu:
    """CPU seconds of a process and all its descendants, read from /proc at every `sample()`.

    The script's JVM is not always waited for by its parent, so RUSAGE_CHILDREN would miss it; each
    process's last reading is kept instead (a process loses at most the CPU of its last sampling
    interval)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.last: dict[int, float] = {}

    def sample(self) -> None:
        for pid in [self.pid, *descendants(self.pid)]:
            seconds = cpu_seconds(pid)
            if seconds is not None:
                self.last[pid] = max(seconds, self.last.get(pid, 0.0))

    @property
    def seconds(self) -> float:
        return sum(self.last.values())


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


async def run(
    messages: int, body_size: int, progress: Progress, script: Path | None = None, *, brokers: int = 1
) -> list[Measurement]:
    """Run spark_bench.py with `messages` (and `brokers` broker processes); its rows, or one skipped row
    saying why not."""
    script = script or default_script()
    why = unavailable_reason(script)
    if why is not None:
        return [Measurement("W7", "-", SYSTEM, note=why, skipped=True)]
    # Spark start-up, filling the topic, ~17 passes over N rows and a 25 s latency run; bounded.
    timeout = 300.0 + messages / 250.0
    progress.begin(f"W7 spark_bench.py --messages {messages:,}", timeout, "rows come at the end")
    # Raised broker pull limits (the README's bulk-read tip): RocketMQ's 32 messages per pull would
    # measure the broker's per-request cost, not the connector.
    # The packaged script runs as a module: run as a file, its directory would shadow top-level imports.
    target = ["-m", SCRIPT_MODULE] if script == default_script() else [str(script)]
    argv = [sys.executable, *target, "--messages", str(messages), "--size", str(body_size)]
    argv += ["--max-transfer", "1024"]
    if brokers > 1:
        argv += ["--brokers", str(brokers)]
    started = time.perf_counter()
    # A session of its own: on timeout the script, its JVM and its server go down together.
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    communicate = asyncio.ensure_future(proc.communicate())
    tree = TreeCpu(proc.pid)
    try:
        while not communicate.done():
            if time.perf_counter() - started > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                await communicate
                return [
                    Measurement(
                        "W7", "-", SYSTEM, note=f"failed: no result after {timeout:.0f} s", skipped=True
                    )
                ]
            progress.tick()
            tree.sample()
            await asyncio.wait({communicate}, timeout=0.5)
        out, err = communicate.result()
    except BaseException:
        with_group_killed(proc.pid)
        raise
    wall = time.perf_counter() - started
    text = out.decode(errors="replace")
    if proc.returncode != 0:
        tail = _tail(err.decode(errors="replace") or text)
        return [
            Measurement(
                "W7",
                "-",
                SYSTEM,
                note=f"failed: spark_bench.py exited {proc.returncode}: {tail}",
                skipped=True,
            )
        ]
    rows = parse_spark_table(text)
    if not rows:
        return [
            Measurement(
                "W7",
                "-",
                SYSTEM,
                note=f"failed: no rows in spark_bench.py's output: {_tail(text)}",
                skipped=True,
            )
        ]
    results = to_measurements(rows, parse_message_count(text) or messages, body_size)
    cpu = tree.seconds
    results[0].note = (results[0].note + "; " if results[0].note else "") + (
        f"whole script {wall:.0f} s, {cpu / wall:.2f} cores "
        "(Spark, its Python workers and its own orbitmq serve)"
    )
    return results


def with_group_killed(pid: int) -> None:
    """SIGKILL the process group the script leads (it was started in a session of its own)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
