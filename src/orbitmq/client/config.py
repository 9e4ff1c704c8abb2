"""ClientConfig: what every producer and consumer of one client instance shares (fact sheet 7.5).

Pure values; no I/O beyond reading the environment and the local host name.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field

_instance_counter = itertools.count()


def parse_namesrv_addrs(addrs: str | Sequence[str] | None) -> list[str]:
    """`"a:9876;b:9876"` (RocketMQ's separator), a list, or NAMESRV_ADDR from the environment."""
    if addrs is None:
        addrs = os.environ.get("NAMESRV_ADDR", "")
    if isinstance(addrs, str):
        addrs = addrs.replace(",", ";").split(";")
    return [a.strip() for a in addrs if a and a.strip()]


def local_ip() -> str:
    """This host's address as its name resolves (only used inside the client id); 127.0.0.1 if none."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def default_instance_name() -> str:
    """RocketMQ replaces the instance name "DEFAULT" by `pid#nanotime`; a counter keeps several
    clients of one process apart, which every consumer of a group must be."""
    return f"{os.getpid()}#{next(_instance_counter)}#{os.times().elapsed * 1e9:.0f}"


@dataclass(slots=True)
class ClientConfig:
    namesrv_addrs: list[str] = field(default_factory=list)
    instance_name: str = field(default_factory=default_instance_name)
    client_ip: str = field(default_factory=local_ip)
    unit_name: str | None = None
    poll_namesrv_interval: float = 30.0
    heartbeat_interval: float = 30.0
    persist_offset_interval: float = 5.0
    rebalance_interval: float = 20.0
    api_timeout: float = 3.0  # mqClientApiTimeout: heartbeat, route fetch, unregister, consumer ids

    @property
    def client_id(self) -> str:
        cid = f"{self.client_ip}@{self.instance_name}"
        return f"{cid}@{self.unit_name}" if self.unit_name else cid
