"""BrokerConfig: a RocketMQ `broker.conf` read into typed fields, with RocketMQ 4.9.7's defaults.

Keys are RocketMQ's camelCase names, so an existing broker.conf works unchanged; each field's docstring
says what it does (docs/configuration.md lists them). Unknown keys are kept (`extra`); the store reads
its own keys from `properties()`. This module knows nothing of sockets, the store or request codes.
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
from orbitmq.protocol.properties_text import decode_properties_text, rewrite_properties_text
from orbitmq.protocol.rocketmq_config_keys import BROKER_KEYS, NETTY_SERVER_KEYS
from orbitmq.store.config import STORE_KINDS
from orbitmq.transport.limits import ServerLimitFields

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
class BrokerConfig(ServerLimitFields):
    """The broker's settings. Keys the store reads too (storePathRootDir, flushDiskType, ...) are
    described here; the store's own in store/config.py; serverMax* in transport/limits.py."""

    broker_cluster_name: str = "DefaultCluster"
    """The cluster this broker belongs to: nameservers group brokers by it, admin verbs take it (-c)."""
    broker_name: str = field(default_factory=_default_broker_name)
    """The broker group's name, shared by a master and its slaves. Default: this host's name
    (`orbitmq serve`: broker-a)."""
    broker_id: int = 0
    """0 for a master (masters are always 0); 1 or more for a slave."""
    namesrv_addr: str | None = field(default_factory=lambda: os.environ.get("NAMESRV_ADDR"))
    """The nameservers to register with, `host:port` separated by `;`. Default: the NAMESRV_ADDR
    environment variable."""
    listen_port: int = 10911
    """The port clients and other servers connect to; 0 picks a free one (the `listening on` line
    names it)."""
    broker_ip1: str = "127.0.0.1"
    """The address the broker listens on and registers with the nameservers: clients connect to it."""
    broker_ip2: str = "127.0.0.1"
    """The address a master gives its slaves for replication (its HA port)."""
    ha_listen_port: int = 10912
    """The master's port slaves replicate from: always listenPort + 1, as RocketMQ's start-up sets it
    (a free port when listenPort is 0)."""
    store_path_root_dir: str = field(default_factory=lambda: str(Path.home() / "store"))
    """The store's directory: commitlog/, consumequeue/, index/, config/, checkpoint. Default: ~/store
    (`orbitmq serve`: $ORBITMQ_HOME/store or ~/.orbitmq/store)."""
    store_path_commit_log: str | None = None
    """The commit log's directory, when not <storePathRootDir>/commitlog."""
    flush_disk_type: str = "ASYNC_FLUSH"
    """ASYNC_FLUSH: a send is answered once its message is in the page cache, flushed to disk within
    flushIntervalCommitLog ms; SYNC_FLUSH: only once it is on disk (group commit)."""
    broker_role: str = "ASYNC_MASTER"
    """ASYNC_MASTER (answers before slaves have the message), SYNC_MASTER (answers once a slave has it,
    within slaveTimeout) or SLAVE (replicates from its master, refuses sends)."""
    sync_flush_timeout: int = 5000
    """Milliseconds a SYNC_FLUSH send waits for the disk before it is answered FLUSH_DISK_TIMEOUT (the
    message is stored either way)."""
    file_reserved_time: int = 72
    """Hours a commit-log file is kept after its last write before retention deletes it."""
    delete_when: str = "04"
    """The hours of day (`;`-separated, e.g. 04;16) at which expired files are deleted."""
    mapped_file_size_commit_log: int = 1073741824
    """Bytes of one commit-log file (segment); fixed once a store holds data."""
    mapped_file_size_consume_queue: int = 6000000
    """Bytes of one consume-queue file (rounded up to whole 20-byte entries); fixed once written."""
    max_message_size: int = 4194304
    """The largest message (body and properties) the broker stores, in bytes; larger sends are refused."""
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    """The delay of each delay level (1, 2, ...) of scheduled messages: space-separated durations with
    unit s, m, h or d."""
    timer_wheel_enable: bool = True
    """Take timer messages (a delivery time in TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS or
    __STARTDELIVERTIME, or a 5.x client's delivery timestamp); false refuses them (timerWheelEnable)."""
    timer_precision_ms: int = 1000
    """Width in ms of one timer wheel slot: a timer message is delivered within this after its time
    (timerPrecisionMs)."""
    timer_max_delay_sec: int = 259200
    """The furthest ahead, in seconds, a timer message may ask to be delivered; the wheel file holds two
    such spans of slots (timerMaxDelaySec)."""
    mapped_file_size_timer_log: int = 100 * 1024 * 1024
    """Bytes the timer log may reach before it is rewritten without the records already delivered (when
    those are most of it) (mappedFileSizeTimerLog)."""
    timer_flush_interval_ms: int = 1000
    """Milliseconds between two flushes of the timer log and wheel and their checkpoint
    (timerFlushIntervalMs)."""
    flush_delay_offset_interval: int = 10000
    """Milliseconds between two saves of the delay levels' progress (delayOffset.json)."""
    default_query_max_num: int = 32
    """The most messages a query by unique key (message id) returns, whatever the request asks."""
    broker_permission: int = 6
    """The broker's own permission bits: 6 read and write, 4 read only, 2 write only."""
    default_topic_queue_nums: int = 8
    """Queues of the TBW102 template topic, the most a topic created at its first send can get."""
    auto_create_topic_enable: bool = True
    """Create an unknown topic at its first send (from the TBW102 template), as RocketMQ does."""
    cluster_topic_enable: bool = True
    """Keep a topic named after the cluster, readable and writable (false: only inheritable)."""
    broker_topic_enable: bool = True
    """Keep a topic named after the broker, readable and writable (false: only inheritable)."""
    auto_create_subscription_group: bool = True
    """Create an unknown consumer group's subscription settings at its first request."""
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    """The message-trace topic created when traceTopicEnable=true."""
    trace_topic_enable: bool = False
    """Create the message-trace topic (msgTraceTopicName) at start."""
    flush_consumer_offset_interval: int = 5000
    """Milliseconds between two saves of the consumer offsets (consumerOffset.json)."""
    long_polling_enable: bool = True
    """Hold a pull that finds no message until one arrives or the consumer's suspend time passes;
    false: hold it shortPollingTimeMills."""
    short_polling_time_mills: int = 1000
    """Milliseconds an empty pull is held when longPollingEnable=false."""
    notify_consumer_ids_changed_enable: bool = True
    """Tell a group's consumers when one joins or leaves, so they rebalance at once."""
    region_id: str = "DefaultRegion"
    """The region written into every stored message (MSG_REGION) and send answer."""
    trace_on: bool = True
    """The TRACE_ON flag of send answers: whether clients may send traces of this broker's messages."""
    metrics_port: int = -1
    """The Prometheus endpoint's port on brokerIP1 (-1 off, 0 a free port); needs the ops extra."""
    grpc_server_port: int = -1
    """The gRPC endpoint for RocketMQ 5.x clients, RocketMQ 5 proxy's key (-1 off, 0 a free port); needs
    the grpc extra (grpcServerPort)."""
    register_name_server_period: int = 30000
    """Milliseconds between two registrations with every nameserver (held between 10 and 60 s)."""
    register_broker_timeout_mills: int = 6000
    """Milliseconds one registration with a nameserver may take."""
    force_register: bool = True
    """Accepted for RocketMQ's broker.conf; orbitmq registers in full every period either way."""
    compressed_register: bool = False
    """Accepted for RocketMQ's broker.conf; orbitmq registers uncompressed (it reads both)."""
    slave_read_enable: bool = False
    """Let consumers read from a slave when the master finds their reads fall far behind (out of
    memory): the pull answer then suggests the slave."""
    enable_property_filter: bool = False
    """Accept SQL92 subscriptions and filter pulls with them (property filtering)."""
    reject_transaction_message: bool = False
    """Refuse transactional (half) messages."""
    transaction_time_out: int = 6000
    """Milliseconds a half message waits for its commit or rollback before the broker asks the
    producer (check-back)."""
    transaction_check_max: int = 15
    """Check-backs of one half message before it is discarded."""
    transaction_check_interval: int = 60000
    """Milliseconds between two rounds of check-backs."""
    store_reply_message_enable: bool = True
    """Store request-reply replies in the commit log too, besides pushing them to the requester."""
    acl_enable: bool = False
    """Check every request against aclFile's accounts (ACL signatures, RocketMQ's AclClientRPCHook)."""
    broker_config_path: str | None = None
    """The file the broker was started with (-c): UPDATE_BROKER_CONFIG writes accepted changes back to
    it. Set by the command line."""
    config_black_list: str = (
        "configBlackList;brokerConfigPath;rocketmqHome;storePathRootDir;storePathCommitLog"
    )
    """Keys UPDATE_BROKER_CONFIG refuses, `;`-separated. orbitmq adds the store paths to RocketMQ's
    list, so a remote request can never move the store or the config file."""
    acl_file: str = "plain_acl.yml"
    """The ACL file (plain_acl.yml); a relative path is relative to broker.conf's directory."""
    access_key: str | None = None
    """orbitmq's own: the account the broker signs its nameserver requests with, for a nameserver with
    aclEnable=true (`orbitmq serve` picks an admin account of aclFile when unset)."""
    secret_key: str | None = None
    """orbitmq's own: accessKey's secret (GET_BROKER_CONFIG shows it masked)."""
    client_channel_expired_timeout: int = 120000
    """orbitmq's own: milliseconds without a heartbeat after which a producer or consumer is
    forgotten (RocketMQ: 120 s, fixed)."""
    client_housekeeping_interval: int = 10000
    """orbitmq's own: milliseconds between two scans for expired clients (RocketMQ: 10 s, fixed)."""
    rebalance_lock_max_live_time: int = 60000
    """orbitmq's own: milliseconds an orderly consumer's queue lock lasts without renewal (RocketMQ: a
    JVM property)."""
    retention_check_interval: int = 10000
    """orbitmq's own: milliseconds between two retention checks (RocketMQ's cleanResourceInterval)."""
    filter_expression_max_depth: int = 100
    """orbitmq's own: the deepest nesting a SQL92 subscription may have."""
    server_channel_max_idle_time_seconds: int = 120
    """Seconds a connection may go without traffic before the broker closes it; 0 = never."""
    server_busy_poll_micros: int = 0
    """orbitmq's own: the most microseconds the loop keeps polling after an answer instead of
    sleeping, the window adapting to how soon requests come; 0 = off (the cores are the operator's)."""
    send_gather_min_requests: int = 8
    """orbitmq's own: a turn of at least this many received requests (one read of a pipelining
    connection) writes its plain sends' records with one vectored write before their answers leave;
    0 = never."""
    record_tail_cache_max_entries: int = 4096
    """orbitmq's own: record-tail layouts cached by (topic, properties) length."""
    tags_code_cache_max_entries: int = 4096
    """orbitmq's own: tags whose consume-queue code is cached (tags of at most 256 characters)."""
    index_defer_max_entries: int = 256
    """orbitmq's own: key-index entries deferred and then written at once."""
    index_defer_millis: int = 10
    """orbitmq's own: the most milliseconds the first deferred key-index entry waits."""
    index_topic_prefix_cache_max_entries: int = 10000
    """orbitmq's own: topics whose key-index prefix hash is cached."""
    valid_name_cache_max_entries: int = 65536
    """orbitmq's own: topic names, and as many group names, remembered as valid."""
    malloc_mmap_threshold: int = 32 * 1024 * 1024
    """orbitmq's own (glibc, process-wide): buffers up to this many bytes come from the heap rather
    than one mmap each, so megabyte batch frames reuse memory; 0 keeps the C library's default."""
    malloc_trim_threshold: int = 64 * 1024 * 1024
    """orbitmq's own (glibc, process-wide): free heap bytes kept before they are given back to the
    system; 0 keeps the C library's default."""
    # Controller mode (RocketMQ 5, RIP-44; broker/services/controller_mode.py).
    enable_controller_mode: bool = False
    """The controller assigns this broker's id and role; brokerId and brokerRole are then ignored."""
    controller_addr: str = ""
    """The controllers' remoting addresses, ';'-separated (a nameserver's when it embeds one)."""
    broker_heartbeat_interval: int = 1000
    """Milliseconds between BROKER_HEARTBEATs to every controller."""
    controller_heart_beat_timeout_mills: int = 10000
    """How long the controller keeps this broker alive after its last heartbeat; a master that cannot
    reach the controller for this long refuses writes until the controller confirms it."""
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
    extra: dict[str, str] = field(default_factory=dict)
    # Keys this class does not know, kept verbatim (the store may know them; GET_BROKER_CONFIG shows them).
    generation: int = field(default=0, init=False, repr=False, compare=False)
    # Not a property: counts assignments to the other fields (see __setattr__), so that a reader keeping
    # values of the config (the send processor, per send) knows when to read them again.

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
# The least value of orbitmq's keys that have one; less is refused when the broker is built.
MINIMUMS: Final = {
    "recordTailCacheMaxEntries": 1,
    "tagsCodeCacheMaxEntries": 1,
    "indexDeferMaxEntries": 1,
    "timerPrecisionMs": 1,
    "timerMaxDelaySec": 1,
    "timerFlushIntervalMs": 1,
    "mappedFileSizeTimerLog": 0,
    "indexDeferMillis": 0,
    "indexTopicPrefixCacheMaxEntries": 1,
    "validNameCacheMaxEntries": 1,
    "mallocMmapThreshold": 0,
    "mallocTrimThreshold": 0,
    "serverBusyPollMicros": 0,
    "sendGatherMinRequests": 0,
}


def check_minimums(config: BrokerConfig) -> None:
    """Refuse a value under its key's minimum (MINIMUMS), naming the key."""
    for key, least in MINIMUMS.items():
        value = getattr(config, _BY_CAMEL[key])
        if value < least:
            raise ValueError(f"{key} must be at least {least}, not {value}")


# Never shown by GET_BROKER_CONFIG.
SECRET_KEYS = frozenset({"secretKey", "tls.server.keyPassword", "tls.client.keyPassword"})


def broker_key(attr: str) -> str | None:
    """The broker.conf key of a field, None for a field that is not a setting."""
    return None if attr in _NOT_PROPERTIES else _camel(attr)


def known_broker_keys() -> set[str]:
    """Every key orbitmq's broker acts on (its own, the store's and TLS's)."""
    return set(_KINDS) | set(STORE_KINDS) | TLS_KEYS


# ---------------------------------------------------------------------------------- properties text
def parse_properties_text(text: str) -> dict[str, str]:
    """broker.conf text, or an UPDATE_BROKER_CONFIG body, read as java.util.Properties.load reads it."""
    return decode_properties_text(text)


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
