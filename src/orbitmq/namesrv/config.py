"""NamesrvConfig: the NameServer's settings under RocketMQ's property names (fact sheet 7.3), read from
a `namesrv.conf`; each field's docstring says what its key does. Unknown keys are kept (GET_NAMESRV_CONFIG
shows them) but have no effect. Also the properties text codec of GET/UPDATE_NAMESRV_CONFIG bodies.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from orbitmq.controller.config import CONTROLLER_KEYS  # an embedded controller's (enableControllerInNamesrv)
from orbitmq.protocol.config_values import (
    BOOLEAN,
    INT,
    LONG,
    STRING,
    TLS_KEYS,
    ConfigKind,
    boolean_warning,
    java_trim,
    parse_value,
    unknown_key_warning,
)
from orbitmq.protocol.properties_text import decode_properties_text
from orbitmq.protocol.rocketmq_config_keys import NAMESRV_KEYS, NETTY_SERVER_KEYS
from orbitmq.transport.limits import ServerLimitFields

log = logging.getLogger("orbitmq.namesrv.config")
ROCKETMQ_NAMESRV_KEYS = NAMESRV_KEYS | NETTY_SERVER_KEYS

# Names UPDATE_NAMESRV_CONFIG may not change (4.9.8's configBlackList): they are file paths.
CONFIG_BLACK_LIST = frozenset({"configBlackList", "configStorePath", "kvConfigPath", "aclFile", "aclEnable"})


def _home() -> str:
    return os.path.expanduser("~")


@dataclass(slots=True)
class NamesrvConfig(ServerLimitFields):
    """The nameserver's settings; serverMax* are described with ServerLimits (transport/limits.py)."""

    listen_port: int = 9876
    """The port brokers and clients connect to; 0 picks a free one (the `listening on` line names it)."""
    rocketmq_home: str = field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME", ""))
    """Accepted for RocketMQ's namesrv.conf (shown by GET_NAMESRV_CONFIG). Default: $ROCKETMQ_HOME."""
    kv_config_path: str = field(default_factory=lambda: os.path.join(_home(), "namesrv", "kvConfig.json"))
    """Where the KV config (e.g. ORDER_TOPIC_CONFIG) is kept. Default: ~/namesrv/kvConfig.json (`orbitmq
    serve`: beside its store)."""
    config_store_path: str = field(
        default_factory=lambda: os.path.join(_home(), "namesrv", "namesrv.properties")
    )
    """Where UPDATE_NAMESRV_CONFIG writes the changed settings. Default: ~/namesrv/namesrv.properties."""
    product_env_name: str = "center"
    """Accepted for RocketMQ's namesrv.conf (shown by GET_NAMESRV_CONFIG)."""
    metrics_port: int = -1
    """orbitmq's own: the Prometheus endpoint's port (-1 off, 0 a free port); needs the ops extra."""
    cluster_test: bool = False
    """Accepted for RocketMQ's namesrv.conf (shown by GET_NAMESRV_CONFIG)."""
    order_message_enable: bool = False
    """Answer route queries with the topic's ORDER_TOPIC_CONFIG from the KV config (global order)."""
    scan_not_active_broker_interval_ms: int = 10_000
    """orbitmq's own: milliseconds between two scans for brokers that stopped registering (RocketMQ:
    10 s, fixed)."""
    broker_channel_expired_time_ms: int = 120_000
    """orbitmq's own: milliseconds without a registration after which a broker leaves the routes
    (RocketMQ: 120 s, fixed)."""
    server_channel_max_idle_time_seconds: int = 120
    """Seconds a connection may go without traffic before the nameserver closes it; 0 = never."""
    acl_enable: bool = False
    """Beyond RocketMQ 4.9.8 (whose nameserver has no ACL): the writes (REGISTER_BROKER,
    UNREGISTER_BROKER, KV config, DELETE_TOPIC_IN_NAMESRV, broker write permissions, namesrv config)
    need a request signed by an admin account of aclFile."""
    acl_file: str = "plain_acl.yml"
    """The ACL file (plain_acl.yml); a relative path is relative to namesrv.conf's directory."""
    register_broker_max_inflated_size: int = 32 * 1024 * 1024
    """orbitmq's own: the most bytes a compressed REGISTER_BROKER body may inflate to."""
    extra: dict[str, str] = field(default_factory=dict)

    # RocketMQ name -> (attribute, how its text is read as Java reads it): add a key by adding a row.
    _NAMES: ClassVar[dict[str, tuple[str, ConfigKind]]] = {
        "listenPort": ("listen_port", INT),
        "rocketmqHome": ("rocketmq_home", STRING),
        "kvConfigPath": ("kv_config_path", STRING),
        "configStorePath": ("config_store_path", STRING),
        "productEnvName": ("product_env_name", STRING),
        "metricsPort": ("metrics_port", INT),
        "clusterTest": ("cluster_test", BOOLEAN),
        "orderMessageEnable": ("order_message_enable", BOOLEAN),
        "scanNotActiveBrokerInterval": ("scan_not_active_broker_interval_ms", LONG),
        "brokerChannelExpiredTime": ("broker_channel_expired_time_ms", LONG),
        "serverChannelMaxIdleTimeSeconds": ("server_channel_max_idle_time_seconds", INT),
        "aclEnable": ("acl_enable", BOOLEAN),
        "aclFile": ("acl_file", STRING),
        "serverMaxFrameSize": ("server_max_frame_size", INT),
        "serverMaxHeaderSize": ("server_max_header_size", INT),
        "serverMaxExtFields": ("server_max_ext_fields", INT),
        "serverMaxConnections": ("server_max_connections", INT),
        "serverMaxInflightPerConnection": ("server_max_inflight_per_connection", INT),
        "serverTurnBudgetMillis": ("server_turn_budget_millis", INT),
        "serverMaxUnsupportedLogged": ("server_max_unsupported_logged", INT),
        "registerBrokerMaxInflatedSize": ("register_broker_max_inflated_size", INT),
    }

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> NamesrvConfig:
        config = cls()
        config.update(props)
        return config

    def update(self, props: Mapping[str, str]) -> None:
        """Apply properties by RocketMQ name, read as RocketMQ reads them (trimmed, Java's parsers); a
        value Java would refuse raises ConfigValueError (a ValueError) naming the key and nothing is
        applied. Unknown keys are kept, with one warning line each (a "did you mean" for typos)."""
        parsed: dict[str, object] = {}
        for name, text in props.items():
            entry = self._NAMES.get(name)
            if entry is None:
                if name not in self.extra and name not in TLS_KEYS and name not in CONTROLLER_KEYS:
                    log.warning(
                        unknown_key_warning(name, self._NAMES, ROCKETMQ_NAMESRV_KEYS, "namesrv config")
                    )
                self.extra[name] = java_trim(text)
                continue
            attr, kind = entry
            parsed[attr] = parse_value(name, text, kind)
            if kind is BOOLEAN and (warning := boolean_warning(name, text)):
                log.warning("namesrv config: %s", warning)
        for attr, value in parsed.items():
            setattr(self, attr, value)

    def resolve_beside(self, config_file: str | Path) -> None:
        """A relative `aclFile` is relative to namesrv.conf's directory."""
        acl = Path(self.acl_file)
        if not acl.is_absolute():
            self.acl_file = str(Path(config_file).resolve().parent / acl)

    def to_properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        for name, (attr, _) in self._NAMES.items():
            value = getattr(self, attr)
            props[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        props.update(self.extra)
        return props


def namesrv_key(attr: str) -> str | None:
    """The namesrv.conf key of a field, None for a field that is not a setting."""
    return _KEY_OF.get(attr)


_KEY_OF = {attr: name for name, (attr, _) in NamesrvConfig._NAMES.items()}


def encode_properties_text(props: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in props.items())


def load_config_file(path: str | Path) -> dict[str, str]:
    """A namesrv.conf read as java.util.Properties.load reads it."""
    return decode_properties_text(Path(path).read_text(encoding="utf-8"))
