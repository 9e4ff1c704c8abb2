"""A real orbitmq cluster on 127.0.0.1: nameservers and broker groups (a master and its slaves), each
server a separate `python -m orbitmq` process started from an ordinary broker.conf/namesrv.conf file.

Run as `python -m orbitmq.testing.cluster --workdir DIR`, it starts a cluster, prints the addresses
and conf files, and runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from orbitmq.testing.launch import TEST_STORE_SIZES, write_properties
from orbitmq.testing.process import DEFAULT_START_TIMEOUT, ServerProcess, ServerStartError, start_process

HOST = "127.0.0.1"
CLUSTER_NAME = "DefaultCluster"

_RESTARTS = itertools.count(1)


def free_port(*, pair: bool = False) -> int:
    """A port that is free now (with `pair`, port + 1 is free too: a master's HA port)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind((HOST, 0))
            port: int = s.getsockname()[1]
            if not pair:
                return port
            if port >= 65535:
                continue
            with socket.socket() as s2:
                try:
                    s2.bind((HOST, port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port pair found on 127.0.0.1")


@dataclass
class Node:
    """One server of the cluster: its conf file, fixed port and (while running) its process."""

    kind: str  # "namesrv" | "broker"
    name: str  # conf/log name: namesrv-1, broker-a-0
    workdir: Path
    conf_path: Path
    port: int
    props: dict[str, Any]
    expect: tuple[str, ...]
    process: ServerProcess | None = None

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def is_running(self) -> bool:
        return self.process is not None and self.process.is_running()

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.process.pid

    def start(self, timeout: float = DEFAULT_START_TIMEOUT, *, first: bool = False) -> ServerProcess:
        """Start (or restart) from the conf file; logs go to <workdir>/<name>[.N].out/.err.

        With `first` (the cluster's initial start), a port taken by someone else between choosing it
        and binding it is replaced by a fresh one and the conf file rewritten; a restart keeps its port
        (that is the point of fixed ports)."""
        if self.is_running:
            raise RuntimeError(f"{self.name} is already running")
        for attempt in range(3):
            log_name = self.name if self.process is None else f"{self.name}.{next(_RESTARTS)}"
            try:
                self.process = start_process(
                    self.kind,
                    ["-c", str(self.conf_path)],
                    self.workdir,
                    name=log_name,
                    expect=self.expect,
                    primary=self.kind,
                    timeout=timeout,
                )
                return self.process
            except ServerStartError as exc:
                if not first or attempt == 2 or "in use" not in str(exc):
                    raise
                self.port = free_port(pair=self.expect == ("broker", "ha"))
                self.props["listenPort"] = self.port
                write_properties(self.conf_path, self.props)
        raise AssertionError("unreachable")

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (clean shutdown), SIGKILL after `timeout`."""
        if self.process is None:
            return None
        self.resume()
        return self.process.stop(timeout)

    def kill(self) -> int | None:
        """kill -9."""
        if self.process is None:
            return None
        return self.process.kill()

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets open but answers nothing (a hung server)."""
        if self.is_running:
            os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.is_running:
            os.kill(self.pid, signal.SIGCONT)


@dataclass
class BrokerNode(Node):
    broker_name: str = ""
    broker_id: int = 0
    role: str = "ASYNC_MASTER"

    @property
    def is_master(self) -> bool:
        return self.role != "SLAVE"

    @property
    def ha_address(self) -> str:
        return f"{HOST}:{self.port + 1}"

    @property
    def store_dir(self) -> Path:
        return Path(self.props["storePathRootDir"])


@dataclass
class Cluster:
    """`groups` broker groups (broker-a, broker-b, ...) of one master + `slaves` slaves, `namesrvs`
    nameservers. `broker_conf` / `namesrv_conf` are extra properties for every broker / nameserver;
    `group_conf` maps a broker name to extra properties for that group only.

        with Cluster(workdir, groups=2, slaves=1, namesrvs=2, master_role="SYNC_MASTER") as cluster:
            cluster.namesrv_addr            # "127.0.0.1:P1;127.0.0.1:P2" (a client's namesrvAddr)
            cluster.master("broker-a").kill()    # kill -9
            cluster.master("broker-a").start()   # same conf, same ports, same store

    Every server gets a fixed free port chosen at construction (a master's HA port is listenPort + 1, as
    RocketMQ's haListenPort default), so a restarted server comes back at the same address and a slave
    finds its restarted master again. Conf files: `<workdir>/namesrv-N.conf`,
    `<workdir>/<brokerName>-<brokerId>.conf`. The remoting protocol is spoken only to ask a nameserver
    which brokers are registered (`wait_registered`).
    """

    workdir: Path
    groups: int = 2
    slaves: int = 1
    namesrvs: int = 2
    master_role: str = "ASYNC_MASTER"
    broker_conf: Mapping[str, Any] = field(default_factory=dict)
    namesrv_conf: Mapping[str, Any] = field(default_factory=dict)
    group_conf: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cluster_name: str = CLUSTER_NAME
    nameservers: list[Node] = field(init=False, default_factory=list)
    brokers: list[BrokerNode] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.master_role not in ("ASYNC_MASTER", "SYNC_MASTER"):
            raise ValueError(f"master_role must be ASYNC_MASTER or SYNC_MASTER, not {self.master_role!r}")
        for i in range(1, self.namesrvs + 1):
            name = f"namesrv-{i}"
            port = free_port()
            props: dict[str, Any] = {
                "listenPort": port,
                "kvConfigPath": self.workdir / name / "kvConfig.json",
                "configStorePath": self.workdir / name / "namesrv.properties",
                **self.namesrv_conf,
            }
            conf = write_properties(self.workdir / f"{name}.conf", props)
            self.nameservers.append(Node("namesrv", name, self.workdir, conf, port, props, ("namesrv",)))
        for g in range(self.groups):
            broker_name = f"broker-{chr(ord('a') + g)}"
            for broker_id in range(self.slaves + 1):
                self.brokers.append(self._broker_node(broker_name, broker_id))

    def _broker_node(self, broker_name: str, broker_id: int) -> BrokerNode:
        role = self.master_role if broker_id == 0 else "SLAVE"
        port = free_port(pair=broker_id == 0)
        name = f"{broker_name}-{broker_id}"
        props: dict[str, Any] = {
            "brokerClusterName": self.cluster_name,
            "brokerName": broker_name,
            "brokerId": broker_id,
            "brokerRole": role,
            "listenPort": port,
            "namesrvAddr": self.namesrv_addr,
            "storePathRootDir": self.workdir / f"store-{name}",
            "flushDiskType": "ASYNC_FLUSH",
            **TEST_STORE_SIZES,
            **self.broker_conf,
            **self.group_conf.get(broker_name, {}),
        }
        conf = write_properties(self.workdir / f"{name}.conf", props)
        expect = ("broker", "ha") if role != "SLAVE" else ("broker",)
        return BrokerNode(
            "broker",
            name,
            self.workdir,
            conf,
            port,
            props,
            expect,
            broker_name=broker_name,
            broker_id=broker_id,
            role=role,
        )

    # ---- addresses --------------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        """All nameservers, `;`-joined (a client's or broker's namesrvAddr)."""
        return ";".join(n.address for n in self.nameservers)

    @property
    def namesrv_addrs(self) -> list[str]:
        return [n.address for n in self.nameservers]

    @property
    def broker_names(self) -> list[str]:
        return sorted({b.broker_name for b in self.brokers})

    def master(self, broker_name: str) -> BrokerNode:
        return self.broker(broker_name, 0)

    def slave(self, broker_name: str, broker_id: int = 1) -> BrokerNode:
        return self.broker(broker_name, broker_id)

    def broker(self, broker_name: str, broker_id: int) -> BrokerNode:
        for b in self.brokers:
            if b.broker_name == broker_name and b.broker_id == broker_id:
                return b
        raise KeyError(f"no broker {broker_name}/{broker_id} in this cluster")

    # ---- lifecycle --------------------------------------------------------------------------

    def start(self, timeout: float = DEFAULT_START_TIMEOUT) -> Cluster:
        """Nameservers first, then every master, then the slaves (all in parallel within a step)."""
        try:
            self._start_all(self.nameservers, timeout)
            for b in self.brokers:  # a nameserver may have moved to another port while starting
                if b.props["namesrvAddr"] != self.namesrv_addr:
                    b.props["namesrvAddr"] = self.namesrv_addr
                    write_properties(b.conf_path, b.props)
            self._start_all([b for b in self.brokers if b.is_master], timeout)
            self._start_all([b for b in self.brokers if not b.is_master], timeout)
        except BaseException:
            self.stop()
            raise
        return self

    @staticmethod
    def _start_all(nodes: Sequence[Node], timeout: float) -> None:
        errors: list[BaseException] = []

        def run(node: Node) -> None:
            try:
                node.start(timeout, first=True)
            except BaseException as exc:  # re-raised below, in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(n,)) for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def stop(self) -> None:
        """Brokers (slaves first), then nameservers; each with SIGTERM."""
        order: list[Node] = [b for b in self.brokers if not b.is_master]
        order += [b for b in self.brokers if b.is_master]
        order += self.nameservers
        for node in order:
            with contextlib.suppress(Exception):
                node.stop()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ---- nameserver view --------------------------------------------------------------------

    async def registered_brokers(self, namesrv: str) -> dict[str, dict[int, str]]:
        """broker name -> {broker id: address} as `namesrv` knows it (GET_BROKER_CLUSTER_INFO)."""
        from orbitmq.protocol.codes import RequestCode, ResponseCode
        from orbitmq.protocol.command import RemotingCommand
        from orbitmq.protocol.java_json import loads
        from orbitmq.transport.client import RemotingClient

        client = RemotingClient(connect_timeout=2.0)
        try:
            response = await client.invoke(
                namesrv, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 3.0
            )
        finally:
            await client.close()
        if response.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"GET_BROKER_CLUSTER_INFO from {namesrv}: {response.code} {response.remark}")
        info = loads(response.body_bytes())
        table = info.get("brokerAddrTable") or {}
        out: dict[str, dict[int, str]] = {}
        for name, data in table.items():
            addrs = data.get("brokerAddrs") or {}
            out[str(name)] = {int(str(k)): str(v) for k, v in addrs.items()}
        return out

    async def wait_registered(self, timeout: float = 20.0, *, namesrvs: Sequence[str] | None = None) -> None:
        """Until every running broker is registered with every running (or the given) nameserver."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        targets = (
            list(namesrvs) if namesrvs is not None else [n.address for n in self.nameservers if n.is_running]
        )
        while True:
            missing: list[str] = []
            for ns in targets:
                try:
                    known = await self.registered_brokers(ns)
                except Exception as exc:
                    missing.append(f"{ns}: {exc}")
                    continue
                for b in self.brokers:
                    if b.is_running and known.get(b.broker_name, {}).get(b.broker_id) != b.address:
                        missing.append(f"{b.name} on {ns}")
            if not missing:
                return
            if loop.time() > deadline:
                raise TimeoutError(f"brokers not registered after {timeout}s: {', '.join(missing)}")
            await asyncio.sleep(0.1)

    def describe(self) -> str:
        lines = [f"namesrvAddr={self.namesrv_addr}"]
        for n in self.nameservers:
            lines.append(f"  {n.name:<14} {n.address:<22} {n.conf_path}")
        for b in self.brokers:
            ha = f" ha {b.ha_address}" if b.is_master else ""
            lines.append(f"  {b.name:<14} {b.address:<22} {b.role:<12}{ha}  {b.conf_path}")
        return "\n".join(lines)


def _parse_sets(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m orbitmq.testing.cluster",
        description="Run a local orbitmq cluster (nameservers + master/slave broker groups) until Ctrl-C.",
    )
    parser.add_argument("--workdir", type=Path, help="conf files, stores and logs (default: a new temp dir)")
    parser.add_argument("--groups", type=int, default=2, help="broker groups (default 2)")
    parser.add_argument("--slaves", type=int, default=1, help="slaves per group (default 1)")
    parser.add_argument("--namesrvs", type=int, default=2, help="nameservers (default 2)")
    parser.add_argument("--role", default="ASYNC_MASTER", choices=["ASYNC_MASTER", "SYNC_MASTER"])
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="extra broker.conf property"
    )
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="orbitmq-cluster-"))
    cluster = Cluster(
        workdir,
        groups=args.groups,
        slaves=args.slaves,
        namesrvs=args.namesrvs,
        master_role=args.role,
        broker_conf=_parse_sets(args.set),
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    cluster.start()
    try:
        print(f"orbitmq cluster running in {workdir}", flush=True)
        print(cluster.describe(), flush=True)
        print("Ctrl-C to stop.", flush=True)
        nodes: list[Node] = [*cluster.nameservers, *cluster.brokers]
        while not stop.wait(1.0):
            for node in nodes:
                if node.process is not None and not node.is_running:
                    print(f"{node.name} exited ({node.process.returncode}); see {workdir}", file=sys.stderr)
                    node.process = None
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
