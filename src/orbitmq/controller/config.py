"""ControllerConfig: the controller's settings under RocketMQ 5's ControllerConfig names.

The same keys serve a standalone `orbitmq controller -c controller.conf` and a controller embedded in the
nameserver (`enableControllerInNamesrv=true` in namesrv.conf), so RocketMQ's deployment guide applies.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orbitmq.protocol.config_values import BOOLEAN, boolean_warning, kind_of_annotation, parse_value

log = logging.getLogger("orbitmq.controller.config")


@dataclass(slots=True)
class ControllerConfig:
    listen_port: int = 19876
    """The remoting port of a standalone controller without peers (0 picks a free one)."""
    controller_d_leger_group: str | None = None
    """The Raft group's name; peers of one group replicate one state."""
    controller_d_leger_peers: str | None = None
    """`n0-127.0.0.1:9878;n1-...`: every controller's id and address. Brokers reach a controller at its
    address (their controllerAddr); with several peers, Raft runs beside it at port + raftPortOffset."""
    controller_d_leger_self_id: str | None = None
    """Which of the peers this controller is."""
    controller_store_path: str = ""
    """Where the controller keeps its state (Raft journal or the single controller's file)."""
    enable_elect_unclean_master: bool = False
    """Elect a master from outside the SyncStateSet when none inside is alive (may lose messages)."""
    notify_broker_role_changed: bool = True
    """Push NOTIFY_BROKER_ROLE_CHANGED to a group's brokers after an election."""
    scan_not_active_broker_interval: int = 5000
    """Milliseconds between the leader's scans for brokers whose heartbeat lapsed."""
    controller_raft_port_offset: int = 1
    """orbitmq's own: a peer's Raft (PySyncObj) port is its controller port plus this."""
    controller_raft_password: str | None = None
    """orbitmq's own: encrypts and authenticates Raft traffic (needs `cryptography`). PySyncObj unpickles
    what its port receives: without a password that port must be reachable by the peers only."""
    extra: dict[str, str] = field(default_factory=dict)
    """Keys this class does not know, kept verbatim."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ControllerConfig:
        config = cls()
        for key, raw in props.items():
            name = key.strip()
            attr = _BY_CAMEL.get(name)
            if attr is None:
                log.warning("controller config: unknown key %s, kept but unused", name)
                config.extra[name] = raw.strip()
                continue
            kind = kind_of_annotation(_FIELDS[attr].type)
            setattr(config, attr, parse_value(name, raw, kind))
            if kind is BOOLEAN and (warning := boolean_warning(name, raw)):
                log.warning("controller config: %s", warning)
        config.check()
        return config

    def check(self) -> None:
        """Refuse a peer list that does not name this controller, or malformed peers."""
        peers = self.peers
        if peers and self.controller_d_leger_self_id not in peers:
            raise ValueError(
                f"controllerDLegerSelfId={self.controller_d_leger_self_id!r} is not one of "
                f"controllerDLegerPeers ({', '.join(peers)})"
            )
        if self.scan_not_active_broker_interval <= 0:
            raise ValueError("scanNotActiveBrokerInterval must be positive")
        if len(peers) > 1 and self.controller_raft_port_offset == 0:
            raise ValueError("controllerRaftPortOffset must not be 0: Raft needs a port of its own")

    def properties(self) -> dict[str, str]:
        """Every key and its value as a properties file writes it (GET_CONTROLLER_CONFIG); never the
        Raft password."""
        out = {}
        for camel, attr in _BY_CAMEL.items():
            value = getattr(self, attr)
            if camel == "controllerRaftPassword":
                value = "******" if value else ""
            out[camel] = ("true" if value else "false") if isinstance(value, bool) else str(value or "")
        return out

    def update(self, props: Mapping[str, str]) -> None:
        """UPDATE_CONTROLLER_CONFIG: apply every key or none. PermissionError for a key fixed while
        running (RUNTIME_FIXED: where it listens, stores, and who its Raft peers are); ValueError for an
        unknown key or a bad value."""
        values: dict[str, Any] = {}
        for key, raw in props.items():
            name = key.strip()
            if name in RUNTIME_FIXED:
                raise PermissionError(f"{name} cannot be changed while the controller runs")
            attr = _BY_CAMEL.get(name)
            if attr is None:
                raise ValueError(f"unknown controller config key {name}")
            values[attr] = parse_value(name, raw, kind_of_annotation(_FIELDS[attr].type))
        trial = dataclasses.replace(self, **values)
        trial.check()
        for attr, value in values.items():
            setattr(self, attr, value)

    @property
    def peers(self) -> dict[str, str]:
        """Raft id -> Raft address, from `controllerDLegerPeers`."""
        out: dict[str, str] = {}
        for raw in (self.controller_d_leger_peers or "").split(";"):
            item = raw.strip()
            if not item:
                continue
            peer_id, sep, address = item.partition("-")
            host, colon, port = address.rpartition(":")
            if not sep or not colon or not host or not port.isdigit():
                raise ValueError(f"controllerDLegerPeers: {item!r} is not ID-HOST:PORT")
            out[peer_id] = address
        return out

    @property
    def self_address(self) -> str | None:
        """This controller's own address among the peers (None without peers)."""
        return self.peers.get(self.controller_d_leger_self_id or "")

    @property
    def raft_peers(self) -> dict[str, str]:
        """Raft id -> Raft address: each peer's address at port + controllerRaftPortOffset."""
        out = {}
        for peer_id, address in self.peers.items():
            host, _, port = address.rpartition(":")
            out[peer_id] = f"{host}:{int(port) + self.controller_raft_port_offset}"
        return out

    @property
    def store_dir(self) -> Path:
        if self.controller_store_path:
            return Path(self.controller_store_path)
        return Path(os.path.expanduser("~")) / "DledgerController"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_FIELDS = {f.name: f for f in dataclasses.fields(ControllerConfig) if f.name != "extra"}
# (RocketMQ spells the Raft keys controllerDLeger*: the d_leger fields give exactly that.)
_BY_CAMEL = {_camel(name): name for name in _FIELDS}
# The keys of controller.conf.
CONTROLLER_CONFIG_KEYS = frozenset(_BY_CAMEL)
# The keys a namesrv.conf may hold for the controller it embeds (enableControllerInNamesrv).
CONTROLLER_KEYS = frozenset(
    {"enableControllerInNamesrv", *(name for name in _BY_CAMEL if name != "listenPort")}
)
# Keys UPDATE_CONTROLLER_CONFIG refuses (RocketMQ's configBlackList, plus what cannot move at runtime).
RUNTIME_FIXED = frozenset(
    {
        "configBlackList",
        "configStorePath",
        "listenPort",
        "controllerDLegerGroup",
        "controllerDLegerPeers",
        "controllerDLegerSelfId",
        "controllerStorePath",
        "controllerRaftPortOffset",
        "controllerRaftPassword",
    }
)
