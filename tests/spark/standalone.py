"""A Spark standalone cluster on 127.0.0.1 for the tests: one master and workers, started from the
pyspark package's own `spark-class`, each in its own process group so that stopping one also stops the
executor JVMs and Python workers it launched.

Ports are 0 everywhere (the REST submission server, which has a fixed port, is off); the master's port
is read back from its log line "Starting Spark master at spark://HOST:PORT".
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+:\d+)")
REGISTERED = "Successfully registered with master"


def java_missing() -> str | None:
    """Why a cluster cannot start here, or None when Java is available."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return None
    if shutil.which("java"):
        return None
    return "no Java runtime: neither JAVA_HOME nor `java` on PATH (Spark's master and workers are JVMs)"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class Standalone:
    workdir: Path
    master_url: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY="256m",  # master/worker heaps; executors get their own setting
            SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
            SPARK_LOG_DIR=str(self.workdir),
            SPARK_WORKER_DIR=str(self.workdir),
        )
        return env

    def _start(self, name: str, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env(),
                cwd=self.workdir,
                start_new_session=True,  # own process group: executors and Python workers live in it
            )
        self.processes.append(proc)
        return proc, log

    @staticmethod
    def _wait_for(proc: subprocess.Popen[bytes], log: Path, pattern: re.Pattern[str], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace") if log.exists() else ""
            found = pattern.search(text)
            if found:
                return found.group(found.lastindex or 0)
            if proc.poll() is not None:
                raise RuntimeError(f"{log.name}: exited with {proc.returncode}:\n{text[-3000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"{log.name}: no {pattern.pattern!r} within {timeout}s:\n{text[-3000:]}")

    def start(self, workers: int, *, worker_memory: str = "640m", timeout: float = 90.0) -> None:
        master, log = self._start(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--webui-port",
                "0",
            ],
        )
        self.master_url = self._wait_for(master, log, MASTER_URL, timeout)
        started = []
        for i in range(workers):
            work = self.workdir / f"worker{i}"
            work.mkdir(exist_ok=True)
            started.append(
                self._start(
                    f"worker{i}",
                    [
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        "0",
                        "--webui-port",
                        "0",
                        "--cores",
                        "1",
                        "--memory",
                        worker_memory,
                        "--work-dir",
                        str(work),
                        self.master_url,
                    ],
                )
            )
        for proc, wlog in started:
            self._wait_for(proc, wlog, re.compile(re.escape(REGISTERED)), timeout)

    def stop(self) -> None:
        """Workers first (they take their executors down), then the master; SIGKILL what lingers."""
        for proc in reversed(self.processes):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 20
        for proc in reversed(self.processes):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:  # the group may outlive its leader (an executor JVM): finish it off
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        self.processes.clear()
