"""NetLab: network namespaces joined by veth pairs to a bridge, for fault tests across real links.

Each node is a namespace with one address in a private subnet; the bridge sits in a hub namespace of its
own, so nothing is added to the host's namespace and no packet can leave the machine. Faults: a link
down, a blackhole route between two nodes (a partition that drops packets, no reset), a token bucket
(tbf) or netem on a node's inbound link. `close()` (also run at exit) kills the processes started here
and deletes the namespaces, which deletes their links.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from orbitmq.testing.process import ServerProcess

CLONE_NEWNET = 0x40000000
_labs = itertools.count()


class NetLabUnavailable(RuntimeError):
    """Network namespaces cannot be created here (not root, or no `ip`)."""


def _ip(*args: str, check: bool = True, tool: str = "ip") -> subprocess.CompletedProcess[str]:
    done = subprocess.run([tool, *args], capture_output=True, text=True, timeout=20, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{tool} {' '.join(args)}: {done.stderr.strip()}")
    return done


class NetLab:
    """Namespaces `omq<pid>x<n>-<node>` on the subnet 10.<subnet>.0.0/24, the bridge in `...-hub`."""

    def __init__(self, subnet: int = 77) -> None:
        self.prefix = f"omq{os.getpid()}x{next(_labs)}"
        self.subnet = subnet
        self.nodes: dict[str, str] = {}  # node -> its address
        self.processes: list[ServerProcess] = []
        self._hub = f"{self.prefix}-hub"
        self._created: list[str] = []
        self._blackholes: set[tuple[str, str]] = set()
        try:
            _ip("netns", "add", self._hub)
        except (OSError, RuntimeError) as exc:
            raise NetLabUnavailable(f"cannot create a network namespace: {exc}") from None
        self._created.append(self._hub)
        atexit.register(self.close)
        _ip("-n", self._hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self._hub, "link", "set", "br0", "up")

    def ns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def add(self, node: str) -> str:
        """A namespace for `node` with loopback up and an address on the bridge; returns the address."""
        index = len(self.nodes) + 2
        ns, hub_end = self.ns(node), f"v{index}"
        _ip("netns", "add", ns)
        self._created.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", self._hub, "link", "add", hub_end, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("-n", self._hub, "link", "set", hub_end, "master", "br0", "up")
        address = f"10.{self.subnet}.0.{index}"
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        self.nodes[node] = address
        return address

    def _hub_end(self, node: str) -> str:
        return f"v{list(self.nodes).index(node) + 2}"

    # ---------------------------------------------------------------------------------- faults
    def link(self, node: str, *, up: bool) -> None:
        """Take the node's link to the bridge down (every peer unreachable) or up again."""
        _ip("-n", self._hub, "link", "set", self._hub_end(node), "up" if up else "down")

    def cut(self, a: str, b: str) -> None:
        """Partition `a` from `b` only: each drops what it would send the other (blackhole routes)."""
        for src, dst in ((a, b), (b, a)):
            _ip("-n", self.ns(src), "route", "add", "blackhole", f"{self.nodes[dst]}/32")
            self._blackholes.add((src, dst))

    def heal(self, a: str, b: str) -> None:
        for src, dst in ((a, b), (b, a)):
            if (src, dst) in self._blackholes:
                _ip("-n", self.ns(src), "route", "del", "blackhole", f"{self.nodes[dst]}/32")
                self._blackholes.discard((src, dst))

    def shape(self, node: str, *qdisc: str) -> None:
        """Put a qdisc on what reaches `node` (the hub end of its link), e.g. `tbf rate 256kbit burst 16kb
        latency 400ms`, or `netem delay 200ms loss 5%` where the kernel has sch_netem."""
        _ip("-n", self._hub, "qdisc", "replace", "dev", self._hub_end(node), "root", *qdisc, tool="tc")

    def unshape(self, node: str) -> None:
        _ip("-n", self._hub, "qdisc", "del", "dev", self._hub_end(node), "root", check=False, tool="tc")

    def has_qdisc(self, kind: str) -> bool:
        """Whether the kernel offers qdisc `kind` (tried on the hub's loopback)."""
        args = {"netem": ["delay", "1ms"], "tbf": ["rate", "1mbit", "burst", "16kb", "latency", "50ms"]}
        lo = ("-n", self._hub, "qdisc", "add", "dev", "lo", "root", kind, *args.get(kind, []))
        done = _ip(*lo, check=False, tool="tc")
        _ip("-n", self._hub, "qdisc", "del", "dev", "lo", "root", check=False, tool="tc")
        return done.returncode == 0

    # ------------------------------------------------------------------------------- processes
    def start(
        self,
        node: str,
        verb: str,
        args: Sequence[str],
        workdir: Path,
        *,
        name: str,
        expect: Sequence[str] = (),
        primary: str = "broker",
        timeout: float = 30.0,
    ) -> ServerProcess:
        """`ip netns exec NS python -m orbitmq VERB ARGS` (ip execs python: the PID is the server's)."""
        argv = ["ip", "netns", "exec", self.ns(node), sys.executable, "-m", "orbitmq", verb, *args]
        proc = ServerProcess(argv, workdir, name=name, expect=expect, primary=primary)
        self.processes.append(proc)
        return proc.wait_ready(timeout)

    @contextlib.contextmanager
    def inside(self, node: str) -> Iterator[None]:
        """Run the calling thread in `node`'s namespace (its new sockets are there) until the block ends."""
        libc = ctypes.CDLL(None, use_errno=True)
        with open("/proc/thread-self/ns/net", "rb") as home:
            with open(f"/run/netns/{self.ns(node)}", "rb") as target:
                if libc.setns(target.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into {self.ns(node)}")
            try:
                yield
            finally:
                if libc.setns(home.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back to the original namespace")

    # --------------------------------------------------------------------------------- cleanup
    def close(self) -> None:
        """Kill the processes (SIGCONT first: a stopped one cannot die of SIGTERM), delete namespaces."""
        for proc in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, 18)  # SIGCONT
            with contextlib.suppress(Exception):
                proc.stop(timeout=5)
        self.processes.clear()
        for ns in reversed(self._created):
            for _ in range(3):
                if _ip("netns", "del", ns, check=False).returncode == 0 or not self._exists(ns):
                    break
                time.sleep(0.2)
        self._created.clear()
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    @staticmethod
    def _exists(ns: str) -> bool:
        return Path("/run/netns", ns).exists()

    def __enter__(self) -> NetLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
