"""StoreConfig: RocketMQ 4.9.7 MessageStoreConfig in snake_case, readable from broker.conf property names.

Field names are the camelCase RocketMQ keys converted to snake_case (`mappedFileSizeCommitLog` ->
`mapped_file_size_commit_log`), so an existing broker.conf configures the store unchanged. Defaults are
RocketMQ's (fact sheet 7.1 and 6.8). This module holds values and their parsing only; it knows no files.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from orbitmq.common.errors import StoreError
from orbitmq.protocol.config_values import (
    BROKER_ROLE,
    FLUSH_DISK_TYPE,
    ConfigKind,
    kind_of_annotation,
    parse_value,
)

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

# (literal Finals: compiled code inlines them)
ASYNC_FLUSH: Final = "ASYNC_FLUSH"
SYNC_FLUSH: Final = "SYNC_FLUSH"
ASYNC_MASTER: Final = "ASYNC_MASTER"
SYNC_MASTER: Final = "SYNC_MASTER"
SLAVE: Final = "SLAVE"


def _default_root() -> str:
    return os.path.join(os.path.expanduser("~"), "store")


class _UnderRoot:
    """A path below the store's root directory (fact sheet 6.1), read as an attribute."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, config: StoreConfig, owner: type[StoreConfig] | None = None) -> str:
        return os.path.join(config.store_path_root_dir, self.name)


@dataclass(slots=True)
class StoreConfig:
    """The store's settings. Keys BrokerConfig has too (storePathRootDir, flushDiskType, brokerRole,
    mappedFileSize*, ...) are described there."""

    store_path_root_dir: str = field(default_factory=_default_root)
    store_path_commit_log: str | None = None  # None -> <root>/commitlog
    mapped_file_size_commit_log: int = 1073741824
    mapped_file_size_consume_queue: int = 6000000
    enable_consume_queue_ext: bool = False
    """Accepted for RocketMQ's broker.conf; orbitmq keeps no consume-queue extension files."""
    flush_interval_commit_log: int = 500
    """ASYNC_FLUSH: milliseconds between two flushes of the commit log."""
    commit_interval_commit_log: int = 200
    """With transientStorePoolEnable: milliseconds between two commits of the write buffer into the
    commit log's files."""
    flush_commit_log_timed: bool = True
    """Accepted for RocketMQ's broker.conf; orbitmq's flusher always waits flushIntervalCommitLog."""
    flush_interval_consume_queue: int = 1000
    """Milliseconds between two flushes of the consume queues (then the index and the checkpoint)."""
    clean_resource_interval: int = 10000
    """Accepted for RocketMQ's broker.conf; the broker's retentionCheckInterval sets the period."""
    delete_commit_log_files_interval: int = 100
    """Accepted for RocketMQ's broker.conf; orbitmq deletes up to 10 expired files per check."""
    delete_consume_queue_files_interval: int = 100
    """Accepted for RocketMQ's broker.conf; orbitmq deletes up to 10 expired files per check."""
    destroy_maped_file_interval_forcibly: int = 120000
    """Accepted for RocketMQ's broker.conf; a file is unmapped once no reader holds it."""
    redelete_hanged_file_interval: int = 120000
    """Accepted for RocketMQ's broker.conf; a file is unmapped once no reader holds it."""
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    """Percent of the disk (held between 10 and 95) above which expired files are deleted at any
    hour, not only at deleteWhen."""
    file_reserved_time: int = 72
    put_msg_index_hight_water: int = 600000
    """Accepted for RocketMQ's broker.conf (RocketMQ's spelling); has no effect in orbitmq."""
    max_message_size: int = 4194304
    check_crc_on_recover: bool = True
    """Check each record's body CRC when recovering the commit log (the segments recovery reads: the
    last three after a clean stop). A record failing it with valid records after it is reported by
    file and offset and skipped, never the end of the log."""
    check_crc_on_read: bool = False
    """orbitmq's own (RocketMQ has no such key): check every record a pull or a lookup reads (magic,
    lengths, body CRC) and refuse a damaged one (logged once, skipped by pulls) instead of sending it;
    a whole record whose consume-queue entry has a wrong size is served with its own. Off, reads
    check nothing per record, as RocketMQ's, and refuse only the damaged records recovery found."""
    flush_commit_log_least_pages: int = 4
    """ASYNC_FLUSH: a flush waits until this many 4 KiB pages are dirty (except the thorough one)."""
    commit_commit_log_least_pages: int = 4
    """With transientStorePoolEnable: a commit waits until this many pages are written (except the
    thorough one)."""
    flush_least_pages_when_warm_maped_file: int = 4096
    """Accepted for RocketMQ's broker.conf; has no effect in orbitmq."""
    flush_consume_queue_least_pages: int = 2
    """A consume-queue flush waits until this many pages are dirty (except the thorough one)."""
    flush_commit_log_thorough_interval: int = 10000
    """ASYNC_FLUSH: milliseconds after which everything dirty is flushed, however little."""
    commit_commit_log_thorough_interval: int = 200
    """With transientStorePoolEnable: milliseconds after which everything written is committed."""
    flush_consume_queue_thorough_interval: int = 60000
    """Milliseconds after which every dirty consume-queue page is flushed, however few."""
    max_transfer_bytes_on_message_in_memory: int = 262144
    """Bytes one pull returns at most while its messages are in memory (page cache)."""
    max_transfer_count_on_message_in_memory: int = 32
    """Messages one pull returns at most while they are in memory (page cache)."""
    max_transfer_bytes_on_message_in_disk: int = 65536
    """Bytes one pull returns at most once its messages are likely on disk only."""
    max_transfer_count_on_message_in_disk: int = 8
    """Messages one pull returns at most once they are likely on disk only."""
    access_message_in_memory_max_ratio: int = 40
    """Percent of physical memory: messages further behind the commit log's end count as on disk
    (smaller pulls, and slaveReadEnable suggests the slave)."""
    message_index_enable: bool = True
    """Index messages by key and unique id, for queries by key or id."""
    max_hash_slot_num: int = 5000000
    """Hash slots of one index file; fixed once a store holds index files."""
    max_index_num: int = 20000000
    """Entries of one index file; fixed once a store holds index files."""
    max_msgs_num_batch: int = 64
    """The most messages a query by key returns."""
    message_index_safe: bool = False
    """After a crash, start recovery from the older of the checkpoint's commit-log and index times,
    so the index is rebuilt too."""
    ha_listen_port: int = 10912
    ha_send_heartbeat_interval: int = 5000
    """Milliseconds between two reports of a slave's offset to its master."""
    ha_housekeeping_interval: int = 20000
    """Milliseconds without traffic after which a replication connection is closed."""
    ha_transfer_batch_size: int = 32768
    """Bytes a master sends a slave in one frame at most."""
    ha_master_address: str | None = None
    """A slave's master replication address (host:port); unset: the one its master registered."""
    ha_slave_fallbehind_max: int = 268435456
    """Bytes a slave may be behind and still count as in sync (SYNC_MASTER answers
    FLUSH_SLAVE_TIMEOUT without waiting for a slave further behind)."""
    ha_max_connections: int = 16
    """orbitmq's own: replication connections the master's HA port accepts at once."""
    broker_role: str = ASYNC_MASTER
    flush_disk_type: str = ASYNC_FLUSH
    sync_flush_timeout: int = 5000
    group_commit_gather_max_micros: int = 1000
    """orbitmq's own: the most microseconds a SYNC_FLUSH group commit waits for the rest of a burst of
    sends, so one fdatasync covers them all."""
    page_prepare_ahead_bytes: int = 0
    """orbitmq's own, opt-in: how far ahead of the commit log's write position a thread brings the
    pages into the page cache, so appends do not allocate and zero them; 0 = off."""
    slave_timeout: int = 3000
    """Milliseconds a SYNC_MASTER send waits for a slave to have its message before it is answered
    FLUSH_SLAVE_TIMEOUT (the message is stored either way)."""
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    flush_delay_offset_interval: int = 10000
    clean_file_forcibly_enable: bool = True
    """Delete unexpired files too when the disk is fuller than diskSpaceCleanForciblyRatio."""
    warm_maped_file_enable: bool = False
    """Accepted for RocketMQ's broker.conf; orbitmq always allocates a new file's blocks before it maps
    it (store/disk_space.py), so a full disk fails there rather than at a later write."""
    offset_check_in_slave: bool = False
    """Let a slave correct a consumer's out-of-range offset (by default only the master does)."""
    duplication_enable: bool = False
    """Accepted for RocketMQ's broker.conf; has no effect in orbitmq."""
    disk_fall_recorded: bool = True
    """Accepted for RocketMQ's broker.conf; has no effect in orbitmq."""
    os_page_cache_busy_time_out_mills: int = 1000
    """Accepted for RocketMQ's broker.conf; has no effect in orbitmq."""
    default_query_max_num: int = 32
    transient_store_pool_enable: bool = False
    """Write messages into off-heap buffers first and commit them to the files every
    commitIntervalCommitLog ms (ASYNC_FLUSH masters only); readers see committed data only."""
    transient_store_pool_size: int = 5
    """Buffers of mappedFileSizeCommitLog bytes each in the transient store pool."""
    fast_fail_if_no_buffer_in_store_pool: bool = False
    """Accepted for RocketMQ's broker.conf; has no effect in orbitmq."""
    # System properties in RocketMQ 4.x (rocketmq.broker.diskSpaceCleanForciblyRatio / ...WarningLevelRatio).
    disk_space_clean_forcibly_ratio: float = 0.85
    """Above it segments go even if not expired; a full disk is writable again below it (0.85 or 85)."""
    disk_space_warning_level_ratio: float = 0.90
    """Above it, or when a new commit-log segment would go above it, writes are refused (0.90 or 90)."""

    # ---- derived values -------------------------------------------------------------------------
    @property
    def commit_log_dir(self) -> str:
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    consume_queue_dir = _UnderRoot("consumequeue")
    index_dir = _UnderRoot("index")
    checkpoint_path = _UnderRoot("checkpoint")
    abort_path = _UnderRoot("abort")  # present while the store runs: found at load = a crash
    lock_path = _UnderRoot("lock")

    @property
    def consume_queue_file_size(self) -> int:
        """The CQ file size rounded up to a whole number of 20-byte entries, as RocketMQ does."""
        return -(-self.mapped_file_size_consume_queue // 20) * 20

    @property
    def sync_flush(self) -> bool:
        return self.flush_disk_type == SYNC_FLUSH

    def delay_levels_ms(self) -> dict[int, int]:
        """Delay level (1-based) -> delay in ms, parsed from `message_delay_level` (fact sheet 7.7)."""
        levels: dict[int, int] = {}
        for i, item in enumerate(self.message_delay_level.split(" ")):
            if not item:
                continue
            unit = item[-1]
            if unit not in _UNIT_MS:
                raise StoreError(f"bad messageDelayLevel item {item!r}")
            levels[i + 1] = int(item[:-1]) * _UNIT_MS[unit]
        return levels

    def delete_hours(self) -> set[int]:
        """The hours of day named by `delete_when` (`;`-separated)."""
        return {int(h) for h in self.delete_when.split(";") if h.strip()}

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> StoreConfig:
        """Read RocketMQ camelCase property names (unknown names are ignored: they belong to the broker).

        Values are parsed as RocketMQ parses them (`protocol/config_values`); one Java would refuse
        raises StoreError naming the key."""
        config = cls()
        for key, raw in props.items():
            name = key.strip()
            kind = STORE_KINDS.get(name)
            if kind is None:
                continue
            try:
                value = parse_value(name, raw, kind)
            except ValueError as exc:
                raise StoreError(f"bad store config value {exc}") from None
            setattr(config, _ATTRS[name], value)
        return config


def _camel(attr: str) -> str:
    head, *rest = attr.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# RocketMQ spells a few keys with capitals the mechanical conversion cannot guess.
_CAMEL_EXCEPTIONS = {"check_crc_on_recover": "checkCRCOnRecover", "check_crc_on_read": "checkCRCOnRead"}
_ATTRS = {_CAMEL_EXCEPTIONS.get(f.name) or _camel(f.name): f.name for f in dataclasses.fields(StoreConfig)}
_ENUMS = {"brokerRole": BROKER_ROLE, "flushDiskType": FLUSH_DISK_TYPE}
# camelCase key -> how its text is read: the table the broker also checks store keys against.
STORE_KINDS: dict[str, ConfigKind] = {
    key: _ENUMS.get(key)
    or kind_of_annotation(next(f.type for f in dataclasses.fields(StoreConfig) if f.name == attr))
    for key, attr in _ATTRS.items()
}
