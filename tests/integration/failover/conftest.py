"""Helpers for the failover tests: real controller, nameserver and broker processes on 127.0.0.1.

Controllers are started with `orbitmq controller -c FILE` and report `controller listening on ...`; the
Raft ports of a three-controller group must be known to every peer up front, so they are free ports
picked just before the start. Requests to a controller go over remoting with RocketMQ 5's codes.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from orbitmq.controller import codes
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.cluster import free_port
from orbitmq.testing.launch import write_properties
from orbitmq.transport.client import RemotingClient

# Three controllers replicate by Raft with PySyncObj (the `controller` extra, pulled into dev).
needs_raft = pytest.mark.skipif(
    importlib.util.find_spec("pysyncobj") is None, reason="PySyncObj is not installed (orbitmq[controller])"
)

LISTENING = re.compile(r"^controller listening on (\S+:\d+)\s*$")


class ControllerProcess:
    def __init__(self, workdir: Path, name: str, conf: dict[str, Any]) -> None:
        self.name = name
        self.conf_path = write_properties(workdir / f"{name}.conf", conf)
        self.workdir = workdir
        self.address = ""
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> ControllerProcess:
        err = open(self.workdir / f"{self.name}.err", "ab")  # noqa: SIM115 - the child keeps it
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "orbitmq", "controller", "-c", str(self.conf_path)],
            cwd=self.workdir,
            stdout=subprocess.PIPE,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
        err.close()
        found = threading.Event()
        stdout = self.popen.stdout
        assert stdout is not None

        def read() -> None:
            with stdout:
                for raw in stdout:
                    match = LISTENING.match(raw.decode(errors="replace").strip())
                    if match:
                        self.address = match.group(1)
                        found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(timeout):
            self.kill()
            raise RuntimeError(f"controller {self.name} did not start:\n{self.log_tail()}")
        return self

    def log_tail(self) -> str:
        path = self.workdir / f"{self.name}.err"
        return "\n".join(path.read_text(errors="replace").splitlines()[-30:]) if path.exists() else ""

    def is_running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def controllers(tmp_path: Path) -> Iterator[Callable[..., list[ControllerProcess]]]:
    """`start(n, **conf)`: n controllers (n > 1: one Raft group), stopped after the test."""
    started: list[ControllerProcess] = []

    def start(n: int = 1, **conf: Any) -> list[ControllerProcess]:
        # A peer's address is where brokers reach it; its Raft port is the next one (free_port's pair).
        peers = ";".join(f"n{i}-127.0.0.1:{free_port(pair=True)}" for i in range(n)) if n > 1 else ""
        procs = []
        for i in range(n):
            props: dict[str, Any] = {
                "listenPort": 0,
                "controllerStorePath": tmp_path / f"controller-n{i}",
                "scanNotActiveBrokerInterval": 500,
            }
            if n > 1:
                props.update(
                    controllerDLegerGroup="group1",
                    controllerDLegerPeers=peers,
                    controllerDLegerSelfId=f"n{i}",
                )
            props.update(conf)
            proc = ControllerProcess(tmp_path, f"controller-n{i}", props)
            started.append(proc)
            procs.append(proc.start())
        return procs

    yield start
    for proc in started:
        proc.stop()


async def ask(
    client: RemotingClient, addr: str, code: int, fields: dict[str, str], body: bytes = b""
) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand.request(code, fields, body), 5.0)


async def leader_of(client: RemotingClient, addrs: list[str], timeout: float = 20.0) -> str:
    """The controller that says it is the Raft leader (waits for an election)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for addr in addrs:
            try:
                answer = await ask(client, addr, codes.CONTROLLER_GET_METADATA_INFO, {})
            except Exception:
                continue
            if answer.ext_fields.get("isLeader") == "true":
                return addr
        await asyncio.sleep(0.2)
    raise AssertionError(f"no controller leader among {addrs} within {timeout}s")


async def replica_info(client: RemotingClient, addrs: list[str], name: str) -> dict[str, Any]:
    """The group's replica info from whichever controller leads: header fields plus the SyncStateSet."""
    for addr in addrs:
        try:
            answer = await ask(client, addr, codes.CONTROLLER_GET_REPLICA_INFO, {"brokerName": name})
        except Exception:
            continue
        if answer.code == 0:
            body = orjson.loads(answer.body_bytes())
            return {**answer.ext_fields, "syncStateSet": body["syncStateSet"]}
    return {}


async def eventually(
    check: Callable[[], Any], timeout: float = 20.0, what: str = "condition", interval: float = 0.2
) -> Any:
    """Await `check()` (sync or async) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")
