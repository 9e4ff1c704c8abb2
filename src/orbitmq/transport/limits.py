"""ServerLimits: the bounds one client cannot push a server past, each a namesrv.conf / broker.conf key.

A server shared by many clients must stay up for all of them when one sends huge frames, opens
endless connections or packs costly requests: every bound closes or refuses only that client's part.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from orbitmq.protocol.command import DEFAULT_MAX_EXT_FIELDS
from orbitmq.protocol.frames import DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_HEADER_SIZE

DEFAULT_MAX_CONNECTIONS = 4096
DEFAULT_MAX_INFLIGHT_PER_CONNECTION = 4096
DEFAULT_TURN_BUDGET_MILLIS = 5
DEFAULT_MAX_UNSUPPORTED_LOGGED = 4096

# property name -> ServerLimits attribute (the config attribute is "server_" + it)
LIMIT_KEYS = {
    "serverMaxFrameSize": "max_frame_size",
    "serverMaxHeaderSize": "max_header_size",
    "serverMaxExtFields": "max_ext_fields",
    "serverMaxConnections": "max_connections",
    "serverMaxInflightPerConnection": "max_inflight_per_connection",
    "serverTurnBudgetMillis": "turn_budget_millis",
    "serverMaxUnsupportedLogged": "max_unsupported_logged",
}


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """What one client can make a server do, bounded; each field is a config key (docs/configuration.md)."""

    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    """Bytes of the longest frame; a longer one closes the connection (RocketMQ: 16 MiB, the
    com.rocketmq.remoting.frameMaxLength property)."""
    max_header_size: int = DEFAULT_MAX_HEADER_SIZE
    """Bytes of the longest request header; a longer one closes the connection before it is buffered."""
    max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS
    """The most ext fields of one request; more close the connection (decoding stays cheap)."""
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Connections at once; more are closed as soon as they are accepted."""
    max_inflight_per_connection: int = DEFAULT_MAX_INFLIGHT_PER_CONNECTION
    """Requests of one connection still being processed (held pulls, flush or replication waits); one
    more is answered SYSTEM_BUSY, so one client cannot take every slot."""
    turn_budget_millis: int = DEFAULT_TURN_BUDGET_MILLIS
    """Milliseconds of request handling one connection gets per event-loop turn when a read holds
    several requests; the rest waits a turn, so other connections are not kept waiting behind it."""
    max_unsupported_logged: int = DEFAULT_MAX_UNSUPPORTED_LOGGED
    """(request code, client) pairs remembered so an unsupported request is logged at INFO once per
    pair; past it new pairs are logged at DEBUG, so the set cannot grow without bound."""

    @classmethod
    def from_config(cls, config: object) -> ServerLimits:
        """From a config object with `server_max_*` attributes (BrokerConfig, NamesrvConfig)."""
        return cls.from_values({attr: int(getattr(config, "server_" + attr)) for attr in LIMIT_KEYS.values()})

    @classmethod
    def from_values(cls, values: Mapping[str, int]) -> ServerLimits:
        """From attribute -> value (a config's fields); every limit must be positive."""
        for attr, value in values.items():
            if value <= 0:
                raise ValueError(f"server limit {attr} must be positive, not {value}")
        return cls(**values)


@dataclass(slots=True)
class ServerLimitFields:
    """The limits as config fields (`server_` + each ServerLimits attribute), shared by BrokerConfig
    and NamesrvConfig; their keys are described with ServerLimits."""

    server_max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    server_max_header_size: int = DEFAULT_MAX_HEADER_SIZE
    server_max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS
    server_max_connections: int = DEFAULT_MAX_CONNECTIONS
    server_max_inflight_per_connection: int = DEFAULT_MAX_INFLIGHT_PER_CONNECTION
    server_turn_budget_millis: int = DEFAULT_TURN_BUDGET_MILLIS
    server_max_unsupported_logged: int = DEFAULT_MAX_UNSUPPORTED_LOGGED


def server_limits(config: object) -> ServerLimits:
    return ServerLimits.from_config(config)
