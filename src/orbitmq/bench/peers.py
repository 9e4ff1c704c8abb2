"""Finding and loading the peer drivers that live in the repository's bench/peers/ directory.

A peer module (bench/peers/<name>_peer.py) exposes NAME, start_server(workdir) -> ServerHandle and
make_driver(server) -> Driver. They sit outside the package because they are benchmark fixtures, not
part of orbitmq; `--peers-dir` or ORBITMQ_BENCH_PEERS points elsewhere (e.g. an installed copy).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

KNOWN_PEERS = ("nats", "redis")


def default_peers_dir() -> Path:
    env = os.environ.get("ORBITMQ_BENCH_PEERS")
    if env:
        return Path(env)
    # src/orbitmq/bench/peers.py -> the repository root is three levels above the package.
    return Path(__file__).resolve().parents[3] / "bench" / "peers"


def load_peer(name: str, peers_dir: Path) -> ModuleType:
    """Import bench/peers/<name>_peer.py; FileNotFoundError if there is no such driver."""
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
