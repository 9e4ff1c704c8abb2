"""NamesrvConfig: the NameServer's settings under RocketMQ's property names (fact sheet 7.3).

Read from a `namesrv.conf` (Java properties text) with RocketMQ's camelCase names; unknown names are
kept (GET_NAMESRV_CONFIG shows them) but have no effect. Two names are orbitmq's own, for tests and
small deployments: `scanNotActiveBrokerInterval` (ms, RocketMQ hard-codes 10000) and
`brokerChannelExpiredTime` (ms, RocketMQ hard-codes 120000); `serverChannelMaxIdleTimeSeconds` is
RocketMQ's NettyServerConfig name. The per-request bounds `serverMaxFrameSize`, `serverMaxHeaderSize`,
`serverMaxExtFields`, `serverMaxConnections`, `serverMaxInflightPerConnection` (transport/limits.py) and
`registerBrokerMaxInflatedSize` (the most a compressed REGISTER_BROKER body may inflate to) are orbitmq's.

Also holds the Java properties text codec used by GET/UPDATE_NAMESRV_CONFIG bodies and the file.
This module must not know sockets or request codes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

# Names UPDATE_NAMESRV_CONFIG may not change (4.9.8's configBlackList): they are file paths.
CONFIG_BLACK_LIST = frozenset({"configBlackList", "configStorePath", "kvConfigPath"})


def _home() -> str:
    return os.path.expanduser("~")


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"


@dataclass(slots=True)
class NamesrvConfig:
    listen_port: int = 9876
    rocketmq_home: str = field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME", ""))
    kv_config_path: str = field(default_factory=lambda: os.path.join(_home(), "namesrv", "kvConfig.json"))
    config_store_path: str = field(
        default_factory=lambda: os.path.join(_home(), "namesrv", "namesrv.properties")
    )
    product_env_name: str = "center"
    cluster_test: bool = False
    order_message_enable: bool = False
    scan_not_active_broker_interval_ms: int = 10_000
    broker_channel_expired_time_ms: int = 120_000
    server_channel_max_idle_time_seconds: int = 120
    # Bounded work per request (transport/limits.py) and the inflated REGISTER_BROKER body.
    server_max_frame_size: int = 16 * 1024 * 1024
    server_max_header_size: int = 512 * 1024
    server_max_ext_fields: int = 1024
    server_max_connections: int = 4096
    server_max_inflight_per_connection: int = 4096
    register_broker_max_inflated_size: int = 32 * 1024 * 1024
    extra: dict[str, str] = field(default_factory=dict)

    _NAMES: ClassVar[dict[str, tuple[str, Callable[[str], object]]]] = {
        "listenPort": ("listen_port", int),
        "rocketmqHome": ("rocketmq_home", str),
        "kvConfigPath": ("kv_config_path", str),
        "configStorePath": ("config_store_path", str),
        "productEnvName": ("product_env_name", str),
        "clusterTest": ("cluster_test", _bool),
        "orderMessageEnable": ("order_message_enable", _bool),
        "scanNotActiveBrokerInterval": ("scan_not_active_broker_interval_ms", int),
        "brokerChannelExpiredTime": ("broker_channel_expired_time_ms", int),
        "serverChannelMaxIdleTimeSeconds": ("server_channel_max_idle_time_seconds", int),
        "serverMaxFrameSize": ("server_max_frame_size", int),
        "serverMaxHeaderSize": ("server_max_header_size", int),
        "serverMaxExtFields": ("server_max_ext_fields", int),
        "serverMaxConnections": ("server_max_connections", int),
        "serverMaxInflightPerConnection": ("server_max_inflight_per_connection", int),
        "registerBrokerMaxInflatedSize": ("register_broker_max_inflated_size", int),
    }

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> NamesrvConfig:
        config = cls()
        config.update(props)
        return config

    def update(self, props: Mapping[str, str]) -> None:
        """Apply properties by RocketMQ name; a bad value raises ValueError naming the property."""
        for name, text in props.items():
            entry = self._NAMES.get(name)
            if entry is None:
                self.extra[name] = text
                continue
            attr, convert = entry
            try:
                value = convert(text.strip())
            except ValueError:
                raise ValueError(f"bad value {text!r} for namesrv property {name}") from None
            setattr(self, attr, value)

    def to_properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        for name, (attr, _) in self._NAMES.items():
            value = getattr(self, attr)
            props[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        props.update(self.extra)
        return props


def decode_properties_text(text: str) -> dict[str, str]:
    """Java properties text -> dict (key=value or key:value lines; # and ! comments)."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            props[line] = ""
        else:
            props[line[:cut].strip()] = line[cut + 1 :].strip()
    return props


def encode_properties_text(props: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in props.items())


def load_config_file(path: str | Path) -> dict[str, str]:
    return decode_properties_text(Path(path).read_text(encoding="utf-8"))
