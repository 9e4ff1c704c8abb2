"""`orbitmq serve --brokers N` (N > 1): this process runs the NameServer, N child processes `orbitmq
broker` run `<brokerName>-1..N` (own store subdirectory, port listenPort + 10 x (i - 1) or free) in one
cluster, so the brokers use N cores while route queries keep being answered. stdout: `namesrv listening
on ...`, then each broker's line. On a stop signal, or when a broker exits, every broker gets SIGTERM
(SIGKILL after 30 s) and the NameServer stops last.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from orbitmq.broker.config import BrokerConfig
from orbitmq.transport.startup import Startup, run_server

log = logging.getLogger("orbitmq.serve")

HOST = "127.0.0.1"
PORT_STEP = 10
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


def child_properties(props: dict[str, str], index: int, namesrv_addr: str) -> dict[str, str]:
    """The broker.conf of broker `index` (1-based) derived from serve's broker properties."""
    config = BrokerConfig.from_properties(props)  # validates the shared part once per child
    name = f"{config.broker_name}-{index}"
    port = int(props.get("listenPort", "10911"))
    child = dict(props)
    child.update(
        {
            "brokerName": name,
            "brokerId": "0",
            "listenPort": str(port + PORT_STEP * (index - 1) if port else 0),
            "storePathRootDir": str(Path(config.store_path_root_dir) / name),
            "namesrvAddr": namesrv_addr,
        }
    )
    child.pop("haListenPort", None)  # each broker derives its own from its port
    return child


def _write_conf(path: Path, props: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{key}={value}\n" for key, value in props.items())
    path.write_text(text, encoding="utf-8")


def _die_with_parent() -> Callable[[], None] | None:
    """Linux: a child that gets SIGTERM when this process dies, even by SIGKILL (no orphaned brokers)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # loaded here: after fork only the call itself runs
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


async def _start_child(conf: Path, log_level: str) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "orbitmq",
        "broker",
        "-c",
        str(conf),
        "--log-level",
        log_level,
        stdout=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        preexec_fn=_die_with_parent(),
    )
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(START_TIMEOUT):
            while True:
                line = (await proc.stdout.readline()).decode("utf-8", errors="replace")
                if not line:
                    raise OSError(f"broker from {conf} exited with {await proc.wait()} before listening")
                if line.startswith("broker ") and " listening on " in line and " ha " not in line:
                    return proc, line.strip()
    except BaseException:
        await _stop_child(proc)
        raise


async def _relay(proc: asyncio.subprocess.Process) -> None:
    """Pass a broker's later stdout lines on (its HA line); keeps its pipe from filling up."""
    assert proc.stdout is not None
    while line := await proc.stdout.readline():
        sys.stdout.write(line.decode("utf-8", errors="replace"))
        sys.stdout.flush()


async def _stop_child(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(STOP_TIMEOUT):
            await proc.wait()
    except TimeoutError:
        log.warning("broker pid %d did not stop in %.0f s: killing it", proc.pid, STOP_TIMEOUT)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def start_brokers(
    run: Startup, count: int, namesrv_port: int, props: dict[str, str], log_level: str
) -> None:
    """Start the NameServer here and `count` brokers as children; a broker that exits on its own stops
    the others and the process, with exit code 1."""
    from orbitmq.namesrv.app import NamesrvApp
    from orbitmq.namesrv.config import NamesrvConfig

    root = Path(BrokerConfig.from_properties(props).store_path_root_dir)
    namesrv_config = NamesrvConfig()
    namesrv_config.listen_port = namesrv_port
    namesrv_config.kv_config_path = str(root.parent / "namesrv" / "kvConfig.json")
    namesrv = await run.start(
        NamesrvApp(namesrv_config, host=HOST), ("nameserver", HOST, namesrv_port, "--port")
    )
    children: list[asyncio.subprocess.Process] = []
    tasks: list[asyncio.Task[None]] = []

    async def stop_children() -> None:
        for task in tasks:  # first: a child stopped now must not count as one that died
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(_stop_child(p) for p in children))

    run.on_stop(stop_children)
    started = [
        _start_child(_conf_for(root, props, i, namesrv.address), log_level) for i in range(1, count + 1)
    ]
    results = await asyncio.gather(*started, return_exceptions=True)
    lines: list[str] = []
    for result in results:
        if not isinstance(result, BaseException):
            children.append(result[0])
            lines.append(result[1])
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        raise failures[0]
    run.announce += [f"namesrv listening on {namesrv.address}", *lines]
    running = asyncio.get_running_loop()
    tasks += [running.create_task(_relay(p)) for p in children]
    tasks += [running.create_task(_watch(run, p)) for p in children]


async def _watch(run: Startup, proc: asyncio.subprocess.Process) -> None:
    code = await proc.wait()
    log.error("broker pid %d exited with %s: stopping", proc.pid, code)
    run.stop(1)


def _conf_for(root: Path, props: dict[str, str], index: int, namesrv_addr: str) -> Path:
    child = child_properties(props, index, namesrv_addr)
    conf = root / f"{child['brokerName']}.conf"
    _write_conf(conf, child)
    return conf


def main(count: int, namesrv_port: int, props: dict[str, str], log_level: str) -> int:
    os.makedirs(BrokerConfig.from_properties(props).store_path_root_dir, exist_ok=True)
    return run_server("orbitmq serve", lambda run: start_brokers(run, count, namesrv_port, props, log_level))
