"""Real server processes for tests: launch `python -m orbitmq VERB ...`, read the bound ports back.

Every server prints one line per listener on stdout before anything else (`namesrv listening on
127.0.0.1:PORT`, `broker NAME listening on ...`, `broker NAME ha listening on ...`). Nothing here
knows remoting or the servers' internals.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

LISTENING = re.compile(r"^(?:(namesrv)|broker (\S+)( ha)?) listening on (\S+:\d+)\s*$")

DEFAULT_START_TIMEOUT = 30.0


class ServerStartError(RuntimeError):
    """A server process died or did not report its listeners in time."""


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no output)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


class ServerProcess:
    """A running `orbitmq` server process and the addresses it listens on."""

    def __init__(
        self,
        argv: Sequence[str],
        workdir: Path,
        *,
        name: str,
        expect: Iterable[str],
        primary: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.workdir = Path(workdir)
        self.name = name
        self.primary = primary
        self.expect = tuple(expect)
        self.addresses: dict[str, str] = {}
        self.broker_names: dict[str, str] = {}  # role -> broker name, from the broker lines
        self.stdout_path = self.workdir / f"{name}.out"
        self.stderr_path = self.workdir / f"{name}.err"
        self._lock = threading.Condition()
        self._stdout_done = False
        self.workdir.mkdir(parents=True, exist_ok=True)
        child_env = dict(os.environ)
        child_env["PYTHONUNBUFFERED"] = "1"
        if env:
            child_env.update(env)
        with open(self.stderr_path, "ab") as stderr:
            self.popen = subprocess.Popen(
                self.argv,
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=child_env,
            )
        self._reader = threading.Thread(target=self._read_stdout, name=f"{name}-stdout", daemon=True)
        self._reader.start()

    # ---- startup ----------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self.popen.stdout is not None
        with open(self.stdout_path, "ab") as out:
            for raw in self.popen.stdout:
                out.write(raw)
                out.flush()
                match = LISTENING.match(raw.decode("utf-8", errors="replace").strip())
                if match:
                    namesrv, broker_name, ha, address = match.groups()
                    role = "namesrv" if namesrv else ("ha" if ha else "broker")
                    with self._lock:
                        self.addresses.setdefault(role, address)
                        if broker_name:
                            self.broker_names.setdefault(role, broker_name)
                        self._lock.notify_all()
        self.popen.stdout.close()
        with self._lock:
            self._stdout_done = True
            self._lock.notify_all()

    def wait_ready(self, timeout: float = DEFAULT_START_TIMEOUT) -> ServerProcess:
        """Block until every expected role has reported its address; ServerStartError otherwise."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not all(role in self.addresses for role in self.expect):
                remaining = deadline - time.monotonic()
                if self._stdout_done or self.popen.poll() is not None:
                    break
                if remaining <= 0:
                    break
                self._lock.wait(min(remaining, 0.1))
            ready = all(role in self.addresses for role in self.expect)
        if ready:
            return self
        if self._stdout_done:
            # stdout closes a moment before the exit status is collectable.
            try:
                self.popen.wait(5)
            except subprocess.TimeoutExpired:
                pass
        code = self.popen.poll()
        why = f"exited with code {code}" if code is not None else f"did not start within {timeout}s"
        self.kill()
        raise ServerStartError(
            f"{self.name} ({' '.join(self.argv[2:])}) {why}; "
            f"listeners seen: {self.addresses or 'none'}, expected {list(self.expect)}\n"
            f"--- {self.stdout_path.name} ---\n{_tail(self.stdout_path)}\n"
            f"--- {self.stderr_path.name} ---\n{_tail(self.stderr_path)}"
        )

    # ---- addresses --------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def address(self) -> str:
        """The primary listener: the namesrv for `namesrv` and `serve`, the broker for `broker`."""
        return self.addresses[self.primary]

    @property
    def namesrv_addr(self) -> str:
        return self.addresses["namesrv"]

    @property
    def broker_addr(self) -> str:
        return self.addresses["broker"]

    @property
    def ha_addr(self) -> str:
        """The broker's HA listener (waits up to 10 s for its line if it is not printed yet)."""
        return self.wait_for("ha", 10.0)

    def wait_for(self, role: str, timeout: float = 10.0) -> str:
        """The address of `role` once its listening line is printed; ServerStartError on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while role not in self.addresses:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stdout_done:
                    raise ServerStartError(
                        f"{self.name} printed no {role!r} listening line within {timeout}s "
                        f"(seen: {self.addresses})\n{self.log_tail()}"
                    )
                self._lock.wait(min(remaining, 0.1))
            return self.addresses[role]

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def is_running(self) -> bool:
        return self.popen.poll() is None

    # ---- lifecycle --------------------------------------------------------------------------

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, wait up to `timeout` s, then SIGKILL; the exit code (negative = killed by signal)."""
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._reader.join(5)
        return self.popen.returncode

    def kill(self) -> int:
        """SIGKILL (a crash, for recovery tests) and wait; the exit code."""
        if self.popen.poll() is None:
            try:
                self.popen.kill()
            except ProcessLookupError:
                pass
        self.popen.wait()
        self._reader.join(5)
        return self.popen.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the process to exit on its own; subprocess.TimeoutExpired if it does not."""
        code = self.popen.wait(timeout)
        self._reader.join(5)
        return code

    def log_tail(self, lines: int = 40) -> str:
        out, err = _tail(self.stdout_path, lines), _tail(self.stderr_path, lines)
        return f"--- stdout ---\n{out}\n--- stderr ---\n{err}"

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else f"exited {self.popen.returncode}"
        return f"<ServerProcess {self.name} pid={self.pid} {self.addresses} {state}>"


def start_process(
    verb: str,
    args: Sequence[str],
    workdir: Path,
    *,
    name: str,
    expect: Iterable[str],
    primary: str,
    timeout: float = DEFAULT_START_TIMEOUT,
    env: dict[str, str] | None = None,
) -> ServerProcess:
    """Run `python -m orbitmq VERB ARGS...` in `workdir` and wait for the `expect`ed listeners.

    A reader thread copies stdout to `<workdir>/<name>.out` and records the listening lines as roles
    ("namesrv", "broker", "ha"); stderr goes to `<workdir>/<name>.err`. If the process exits or the
    timeout passes before the expected roles are known, `ServerStartError` carries the log tails.
    """
    proc = ServerProcess(
        [sys.executable, "-m", "orbitmq", verb, *args],
        workdir,
        name=name,
        expect=expect,
        primary=primary,
        env=env,
    )
    return proc.wait_ready(timeout)
