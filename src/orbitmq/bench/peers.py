"""Finding and loading the peer drivers of `orbitmq bench --peers`: the package's own
(`orbitmq.bench.peer_drivers`, found through importlib.resources, so an installed orbitmq has them),
or a directory of others given by `--peers-dir` / ORBITMQ_BENCH_PEERS.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
from pathlib import Path
from types import ModuleType

KNOWN_PEERS = ("nats", "redis")
DRIVERS_PACKAGE = "orbitmq.bench.peer_drivers"


def packaged_peers_dir() -> Path:
    """The directory of the drivers shipped in the package (found through importlib.resources)."""
    return Path(str(importlib.resources.files(DRIVERS_PACKAGE)))


def default_peers_dir() -> Path:
    env = os.environ.get("ORBITMQ_BENCH_PEERS")
    return Path(env) if env else packaged_peers_dir()


def load_peer(name: str, peers_dir: Path) -> ModuleType:
    """Import `<peers_dir>/<name>_peer.py`; FileNotFoundError if there is no such driver.

    A peer driver has NAME, start_server(workdir) -> ServerHandle and make_driver(server) -> Driver.
    """
    path = peers_dir / f"{name}_peer.py"
    if not path.is_file():
        raise FileNotFoundError(f"no peer driver {path}")
    spec = importlib.util.spec_from_file_location(f"orbitmq_bench_peer_{name}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"cannot load peer driver {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for attribute in ("start_server", "make_driver"):
        if not hasattr(module, attribute):
            raise AttributeError(f"peer driver {path} has no {attribute}()")
    return module


def parse_peer_list(text: str) -> list[str]:
    """'nats,redis' -> ['nats', 'redis']; 'all' -> every known peer; '' or 'none' -> []."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names in ([], ["none"]):
        return []
    if names == ["all"]:
        return list(KNOWN_PEERS)
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return seen
