"""BrokerConfig: a RocketMQ `broker.conf` read into typed fields, with RocketMQ 4.9.7's defaults.

Property names are RocketMQ's camelCase names (brokerClusterName, namesrvAddr, listenPort, brokerIP1,
storePathRootDir, flushDiskType, ...), so an existing broker.conf works unchanged. Unknown keys are kept
(`extra`) and reported back by GET_BROKER_CONFIG; the store reads its own keys from `properties()` via
`StoreConfig.from_properties`.

A few keys are orbitmq's own (RocketMQ hard-codes these values): `clientChannelExpiredTimeout` (120 s
heartbeat expiry), `rebalanceLockMaxLiveTime` (60 s orderly lock expiry; a JVM property in RocketMQ),
`clientHousekeepingInterval` (10 s), `retentionCheckInterval` (10 s, RocketMQ's cleanResourceInterval),
the per-request bounds `serverMaxFrameSize`, `serverMaxHeaderSize`, `serverMaxExtFields`,
`serverMaxConnections`, `serverMaxInflightPerConnection`, `serverTurnBudgetMillis`,
`serverMaxUnsupportedLogged` (see transport/limits.py), and the store's in-memory bounds the broker
applies at start: `recordTailCacheMaxEntries` (4096 record-tail layouts cached by (topic, properties)
length, message/record_layout.py), `tagsCodeCacheMaxEntries` (4096 tags' consume-queue codes, tags of
at most 256 characters, message/hashing.py), `indexDeferMaxEntries` (256 deferred key-index entries
before they are written at once), `indexDeferMillis` (10 ms, the most the first deferred entry waits),
`indexTopicPrefixCacheMaxEntries` (10,000 topics' key-index prefix hashes, store/key_index.py) and
`validNameCacheMaxEntries` (65,536 topic and as many group names already found valid,
message/validation.py); and glibc's heap thresholds `mallocMmapThreshold` (32 MiB) and
`mallocTrimThreshold` (64 MiB), so that batch frames of megabytes reuse heap memory instead of faulting
in fresh pages (common/malloc_tuning.py; 0 leaves the C library's default); and `serverBusyPollMicros`
(0, off): the most µs the loop keeps polling after an answer instead of sleeping, the window adapting to
how soon the next request comes (transport/busy_poll.py);
`sendGatherMinRequests` (8; 0 = never): a turn of at least that many received requests writes its plain
sends' records with one vectored write (store/commit_log.py, write_pending).

This module knows nothing of sockets, the store or request codes.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from orbitmq.protocol.config_values import (
    BOOLEAN,
    BROKER_ROLE,
    FLUSH_DISK_TYPE,
    TLS_KEYS,
    boolean_warning,
    java_trim,
    kind_of_annotation,
    parse_value,
    unknown_key_warning,
)
from orbitmq.protocol.properties_text import rewrite_properties_text
from orbitmq.protocol.rocketmq_config_keys import BROKER_KEYS, NETTY_SERVER_KEYS
from orbitmq.store.config import STORE_KINDS

log = logging.getLogger("orbitmq.broker.config")
ROCKETMQ_BROKER_KEYS = BROKER_KEYS | NETTY_SERVER_KEYS
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

# snake_case attribute -> camelCase property, where the mechanical conversion gets it wrong.
_CAMEL_EXCEPTIONS = {"broker_ip1": "brokerIP1", "broker_ip2": "brokerIP2"}


def _camel(name: str) -> str:
    special = _CAMEL_EXCEPTIONS.get(name)
    if special:
        return special
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _default_broker_name() -> str:
    try:
        return socket.gethostname() or "broker-a"
    except OSError:  # pragma: no cover - gethostname practically never fails
        return "broker-a"


@dataclass(slots=True)
class BrokerConfig:
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = field(default_factory=_default_broker_name)
    broker_id: int = 0
    namesrv_addr: str | None = field(default_factory=lambda: os.environ.get("NAMESRV_ADDR"))
    listen_port: int = 10911
    broker_ip1: str = "127.0.0.1"
    broker_ip2: str = "127.0.0.1"
    ha_listen_port: int = 10912
    store_path_root_dir: str = field(default_factory=lambda: str(Path.home() / "store"))
    store_path_commit_log: str | None = None
    flush_disk_type: str = "ASYNC_FLUSH"
    broker_role: str = "ASYNC_MASTER"
    sync_flush_timeout: int = 5000
    file_reserved_time: int = 72
    delete_when: str = "04"
    mapped_file_size_commit_log: int = 1073741824
    mapped_file_size_consume_queue: int = 6000000
    max_message_size: int = 4194304
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    flush_delay_offset_interval: int = 10000
    default_query_max_num: int = 32
    broker_permission: int = 6
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    trace_topic_enable: bool = False
    flush_consumer_offset_interval: int = 5000
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    # orbitmq's own `metricsPort`: the Prometheus endpoint (-1 off, 0 a free port), bound to brokerIP1.
    metrics_port: int = -1
    register_name_server_period: int = 30000
    register_broker_timeout_mills: int = 6000
    force_register: bool = True
    compressed_register: bool = False
    slave_read_enable: bool = False
    enable_property_filter: bool = False
    reject_transaction_message: bool = False
    transaction_time_out: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int = 60000
    store_reply_message_enable: bool = True
    acl_enable: bool = False
    # The file the broker was started with (-c); UPDATE_BROKER_CONFIG writes accepted changes back to it.
    broker_config_path: str | None = None
    # Keys UPDATE_BROKER_CONFIG refuses (4.9.8's configBlackList, ';'-separated). RocketMQ's default
    # is "configBlackList;brokerConfigPath"; orbitmq adds the paths it would otherwise write back to
    # the file, so a remote request can never move the store or the config elsewhere.
    config_black_list: str = (
        "configBlackList;brokerConfigPath;rocketmqHome;storePathRootDir;storePathCommitLog"
    )
    # plain_acl.yml; relative paths (and the default) are resolved beside broker.conf (`from_file`).
    acl_file: str = "plain_acl.yml"
    # Credentials the broker signs its nameserver requests with (a nameserver with aclEnable=true
    # refuses unsigned REGISTER_BROKER); orbitmq's names, as the client's AccessKey/SecretKey fields.
    access_key: str | None = None
    secret_key: str | None = None
    # orbitmq's own knobs (constants or JVM properties in RocketMQ), configurable so tests can be short.
    client_channel_expired_timeout: int = 120000
    client_housekeeping_interval: int = 10000
    rebalance_lock_max_live_time: int = 60000
    retention_check_interval: int = 10000
    filter_expression_max_depth: int = 100  # nesting bound of a SQL92 selector (protocol/sql92.py)
    # Bounded work per request (transport/limits.py; orbitmq's own keys).
    server_max_frame_size: int = 16 * 1024 * 1024
    server_max_header_size: int = 512 * 1024
    server_max_ext_fields: int = 1024
    server_max_connections: int = 4096
    server_max_inflight_per_connection: int = 4096
    server_turn_budget_millis: int = 5
    server_max_unsupported_logged: int = 4096
    # A connection without traffic for this long is closed (RocketMQ's NettyServerConfig key); 0 = never.
    server_channel_max_idle_time_seconds: int = 120
    # The most µs the broker's loop keeps polling after an answer instead of sleeping; the window adapts
    # to how soon requests come (transport/busy_poll.py). 0 = off: the server's cores are the operator's.
    server_busy_poll_micros: int = 0
    # A turn of at least this many received requests (one read of a pipelining connection) writes its
    # plain sends' records with one vectored write before their answers leave, instead of copying each
    # into the commit log's mapping; 0 = never (store/message_store.py, gather_writes_between_answers).
    send_gather_min_requests: int = 8
    # The store's in-memory bounds (orbitmq's own keys; applied when the broker starts).
    record_tail_cache_max_entries: int = 4096
    tags_code_cache_max_entries: int = 4096
    index_defer_max_entries: int = 256
    index_defer_millis: int = 10
    index_topic_prefix_cache_max_entries: int = 10000
    valid_name_cache_max_entries: int = 65536
    # The C heap (orbitmq's own keys; glibc only, process-wide, applied when the broker starts; 0 leaves
    # the C library's default): buffers up to this size come from the heap, not one mmap each ...
    malloc_mmap_threshold: int = 32 * 1024 * 1024
    # ... and this much free heap is kept before it is given back (common/malloc_tuning.py).
    malloc_trim_threshold: int = 64 * 1024 * 1024
    # Controller mode (RocketMQ 5, RIP-44; broker/services/controller_mode.py).
    enable_controller_mode: bool = False
    """The controller assigns this broker's id and role; brokerId and brokerRole are then ignored."""
    controller_addr: str = ""
    """The controllers' remoting addresses, ';'-separated (a nameserver's when it embeds one)."""
    broker_heartbeat_interval: int = 1000
    """Milliseconds between BROKER_HEARTBEATs to every controller."""
    controller_heart_beat_timeout_mills: int = 10000
    """How long the controller keeps this broker alive after its last heartbeat."""
    check_sync_state_set_period: int = 5000
    """Milliseconds between a master's checks of which slaves are in sync."""
    broker_election_priority: int = 2147483647
    """Lower is preferred when the controller chooses among equally recent replicas."""
    all_ack_in_sync_state_set: bool = False
    """A send is acknowledged only once every replica of the SyncStateSet has it."""
    ha_max_time_slave_not_catchup: int = 15000
    """A slave not caught up with the master for this many ms leaves the SyncStateSet."""
    min_in_sync_replicas: int = 1
    """The fewest replicas (master included) the SyncStateSet may hold for the master to take sends."""
    # Keys this class does not know, kept verbatim (the store may know them; GET_BROKER_CONFIG shows them).
    extra: dict[str, str] = field(default_factory=dict)
    # Not a property: counts assignments to the other fields (see __setattr__), so that a reader keeping
    # values of the config (the send processor, per send) knows when to read them again.
    generation: int = field(default=0, init=False, repr=False, compare=False)

    if not TYPE_CHECKING:  # (hidden from mypy, which would otherwise accept any attribute name)

        def __setattr__(self, name: str, value: object) -> None:
            object.__setattr__(self, name, value)
            if name != "generation":
                try:
                    generation = self.generation
                except AttributeError:  # __init__ sets the fields in order, this one last
                    generation = 0
                object.__setattr__(self, "generation", generation + 1)

    # ----------------------------------------------------------------------------------------- reading
    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Build from RocketMQ property names; raises ValueError naming a key whose value is malformed."""
        config = cls()
        config.update(props)
        return config

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> BrokerConfig:
        config = cls.from_properties(parse_properties_text(Path(path).read_text(encoding="utf-8")))
        config.resolve_beside(path)
        return config

    def resolve_beside(self, config_file: str | os.PathLike[str]) -> None:
        """Make a relative `aclFile` relative to the directory of broker.conf (RocketMQ keeps
        plain_acl.yml in conf/ beside broker.conf)."""
        acl = Path(self.acl_file)
        if not acl.is_absolute():
            self.acl_file = str(Path(config_file).resolve().parent / acl)

    def update(self, props: Mapping[str, str]) -> list[str]:
        """Apply properties (as UPDATE_BROKER_CONFIG does); returns the known keys that changed.

        Values are read as RocketMQ reads them (trimmed, Java's parsers; `protocol/config_values`), but a
        value Java would refuse raises ConfigValueError (a ValueError) naming the key instead of being
        ignored. Store keys are checked with the store's table and kept in `extra`; keys neither knows
        are kept too, with one warning line each (a likely typo gets a "did you mean")."""
        parsed: dict[str, object] = {}
        for key, raw in props.items():
            name = key.strip()
            attr = _BY_CAMEL.get(name)
            if attr is not None:
                kind = _KINDS[name]
                parsed[attr] = parse_value(name, raw, kind)
                if kind is BOOLEAN and (warning := boolean_warning(name, raw)):
                    log.warning("broker config: %s", warning)
                continue
            store_kind = STORE_KINDS.get(name)
            if store_kind is not None:
                parse_value(name, raw, store_kind)  # refuse now, not when the store opens
            elif name not in self.extra:
                log.warning(
                    unknown_key_warning(name, known_broker_keys(), ROCKETMQ_BROKER_KEYS, "broker config")
                )
            self.extra[name] = java_trim(raw)
        # Only now that every value parsed: a bad key leaves the config as it was.
        changed: list[str] = []
        for attr, value in parsed.items():
            if getattr(self, attr) != value:
                setattr(self, attr, value)
                changed.append(_camel(attr))
        if self.broker_role in ("ASYNC_MASTER", "SYNC_MASTER"):
            self.broker_id = 0  # RocketMQ forces masters to id 0
        return changed

    def write_back(self, props: Mapping[str, str]) -> bool:
        """Write `props` (already applied) into the -c file, keeping its comments and other lines, as
        RocketMQ persists UPDATE_BROKER_CONFIG; False when the broker was started without a file."""
        if not self.broker_config_path:
            return False
        path = Path(self.broker_config_path)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        updated = rewrite_properties_text(text, {k.strip(): java_trim(v) for k, v in props.items()})
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(updated, encoding="utf-8")
        os.replace(tmp, path)  # readers see the old file or the new one, never half of it
        return True

    def black_listed(self, keys: Iterable[str]) -> list[str]:
        """The keys UPDATE_BROKER_CONFIG must refuse."""
        black = {k.strip() for k in self.config_black_list.split(";") if k.strip()}
        return sorted(k for k in (key.strip() for key in keys) if k in black)

    # ----------------------------------------------------------------------------------------- derived
    @property
    def namesrv_addresses(self) -> list[str]:
        return [a.strip() for a in (self.namesrv_addr or "").split(";") if a.strip()]

    @property
    def is_slave(self) -> bool:
        return self.broker_role == "SLAVE"

    @property
    def config_dir(self) -> Path:
        return Path(self.store_path_root_dir) / "config"

    def properties(self, *, mask_secrets: bool = False) -> dict[str, str]:
        """Every property as RocketMQ names it (known fields first, then unknown keys); with
        `mask_secrets` (GET_BROKER_CONFIG answers) secret values read `******`."""
        out: dict[str, str] = {}
        for f in dataclasses.fields(self):
            if f.name in _NOT_PROPERTIES:
                continue
            value = getattr(self, f.name)
            if value is None:
                out[_camel(f.name)] = ""
            elif isinstance(value, bool):
                out[_camel(f.name)] = "true" if value else "false"
            else:
                out[_camel(f.name)] = str(value)
        out.update(self.extra)
        if mask_secrets:
            for key in SECRET_KEYS & out.keys():
                if out[key]:
                    out[key] = "******"
        return out

    def store_properties(self) -> dict[str, str]:
        """The properties handed to `StoreConfig.from_properties` (None values dropped)."""
        return {k: v for k, v in self.properties().items() if v != ""}


# camelCase key -> attribute, and the kind of each key: from the dataclass fields, enums overridden.
_NOT_PROPERTIES: Final = frozenset({"extra", "generation"})
_BY_CAMEL = {
    _camel(f.name): f.name for f in dataclasses.fields(BrokerConfig) if f.name not in _NOT_PROPERTIES
}
_ENUM_KEYS = {"flushDiskType": FLUSH_DISK_TYPE, "brokerRole": BROKER_ROLE}
_KINDS = {
    camel: _ENUM_KEYS.get(camel) or kind_of_annotation(f.type)
    for camel, f in (
        (_camel(f.name), f) for f in dataclasses.fields(BrokerConfig) if f.name not in _NOT_PROPERTIES
    )
}
# Never shown by GET_BROKER_CONFIG.
SECRET_KEYS = frozenset({"secretKey", "tls.server.keyPassword", "tls.client.keyPassword"})


def known_broker_keys() -> set[str]:
    """Every key orbitmq's broker acts on (its own, the store's and TLS's)."""
    return set(_KINDS) | set(STORE_KINDS) | TLS_KEYS


# ---------------------------------------------------------------------------------- properties text
def parse_properties_text(text: str) -> dict[str, str]:
    """Java `Properties.load` subset: `key=value`, `key: value` or `key value`; `#`/`!` comments;
    a trailing backslash continues a line; common escapes (\\t \\n \\\\ \\= \\:)."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if _ends_with_continuation(line):
            pending = line[:-1]
            continue
        pending = ""
        key, value = _split_key_value(line)
        if key:
            out[key] = value
    if pending:
        key, value = _split_key_value(pending)
        if key:
            out[key] = value
    return out


def _ends_with_continuation(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    key_chars: list[str] = []
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            key_chars.append(_unescape_char(line[i + 1]))
            i += 2
            continue
        if c in "=: \t":
            break
        key_chars.append(c)
        i += 1
    rest = line[i:].lstrip(" \t")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t")
    return "".join(key_chars), _unescape(rest)


def _unescape_char(c: str) -> str:
    return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c)


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append(_unescape_char(s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def format_properties_text(props: Iterable[tuple[str, str]]) -> str:
    """`key=value` lines, as GET_BROKER_CONFIG returns them."""
    return "".join(f"{k}={v}\n" for k, v in props)


# ------------------------------------------------------------------------------------- delay levels
_UNITS_MS = {"s": 1000, "m": 60000, "h": 3600000, "d": 86400000}


def parse_delay_levels(text: str) -> list[int]:
    """`messageDelayLevel` ("1s 5s ... 2h") -> delay in ms per level (index 0 = level 1)."""
    levels: list[int] = []
    for token in text.split(" "):
        if not token:
            continue
        unit = _UNITS_MS.get(token[-1])
        if unit is None:
            raise ValueError(f"messageDelayLevel: bad unit in {token!r} (use s, m, h or d)")
        try:
            amount = int(token[:-1])
        except ValueError:
            raise ValueError(f"messageDelayLevel: bad number in {token!r}") from None
        levels.append(amount * unit)
    if not levels:
        raise ValueError("messageDelayLevel is empty")
    return levels
