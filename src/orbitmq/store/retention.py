"""Retention: delete expired commit-log segments and the consume-queue and index files they orphan.

RocketMQ's CleanCommitLogService / CleanConsumeQueueService, driven by the broker calling
`clean_expired_files()` periodically (cleanResourceInterval, 10 s). A segment (never the newest) is
deleted when it was last modified more than `file_reserved_time` hours ago and either it is a deletion
hour (`delete_when`), the disk is fuller than `disk_max_used_space_ratio`, or deletion is forced
(`force=True`, RocketMQ's manual delete). Above `disk_space_clean_forcibly_ratio` (0.85) segments are
deleted even if not expired; above `disk_space_warning_level_ratio` (0.90), or when a new commit-log
segment would take the disk there (`check_room`), the store refuses writes until usage is below 0.85.
At most 10 segments go per call. Time comes from the injected Clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from orbitmq.common.clock import Clock
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.config import StoreConfig
from orbitmq.store.consume_queue import CQ_ENTRY_SIZE
from orbitmq.store.consume_queue_table import ConsumeQueueTable
from orbitmq.store.disk_space import DiskFullError, as_ratio, room_for
from orbitmq.store.disk_space import used_ratio as disk_usage_ratio
from orbitmq.store.key_index import KeyIndex
from orbitmq.store.mapped_file import MappedFile

__all__ = ["CleanResult", "DiskUsage", "Retention", "disk_usage_ratio"]
log = logging.getLogger(__name__)
DELETE_FILES_BATCH_MAX = 10
DiskUsage = Callable[[str], float]


@dataclass(slots=True)
class CleanResult:
    commit_log_files: int = 0
    consume_queue_files: int = 0
    index_files: int = 0
    disk_ratio: float = 0.0
    disk_full: bool = False


class Retention:
    def __init__(
        self,
        config: StoreConfig,
        clock: Clock,
        commit_log: CommitLog,
        queues: ConsumeQueueTable,
        key_index: KeyIndex | None,
        *,
        disk_usage: DiskUsage = disk_usage_ratio,
    ) -> None:
        self.config = config
        self.clock = clock
        self.commit_log = commit_log
        self.queues = queues
        self.key_index = key_index
        self.disk_usage = disk_usage
        self._disk_full = False
        self._tight = False
        # disk_full or tight: the one field a put reads (then may_put says whether it can go).
        self.watch = False
        self._cleaned_min_offset = -1

    @property
    def disk_full(self) -> bool:
        """Above the warning ratio (or no room for the log's next segment): the store refuses writes."""
        return self._disk_full

    @disk_full.setter
    def disk_full(self, full: bool) -> None:
        self._disk_full = full
        self.watch = full or self._tight

    @property
    def tight(self) -> bool:
        """Above the clean-forcibly ratio: a put first makes sure its consume queue has room."""
        return self._tight

    @tight.setter
    def tight(self, tight: bool) -> None:
        self._tight = tight
        self.watch = tight or self._disk_full

    def may_put(self, topic: str, queue_id: int, entries: int) -> bool:
        """Whether a put may go while `watch` is on (not full, and its consume queue has room)."""
        return not self._disk_full and (not self._tight or self.queue_has_room(topic, queue_id, entries))

    def _is_delete_hour(self, now_ms: int) -> bool:
        return time.localtime(now_ms // 1000).tm_hour in self.config.delete_hours()

    def check_disk(self) -> tuple[float, bool, bool]:
        """(ratio, space_to_delete, clean_immediately); updates `disk_full`."""
        config = self.config
        ratio = self.disk_usage(config.commit_log_dir)
        clean_immediately = False
        self.tight = ratio > as_ratio(config.disk_space_clean_forcibly_ratio)
        warning = as_ratio(config.disk_space_warning_level_ratio)
        if ratio > warning:
            if not self.disk_full:
                log.error("the disk is %.1f %% full: the store refuses writes", ratio * 100)
            self.disk_full = True
            clean_immediately = True
        elif ratio > as_ratio(config.disk_space_clean_forcibly_ratio):
            clean_immediately = True  # (a full disk stays full until below this ratio, as in RocketMQ)
        else:
            if self.disk_full:
                log.warning("the disk is %.1f %% full again: the store accepts writes", ratio * 100)
            self.disk_full = False
        max_ratio = min(95, max(10, config.disk_max_used_space_ratio)) / 100.0
        return ratio, ratio < 0 or ratio > max_ratio, clean_immediately

    def check_room(self, nbytes: int, ahead: bool) -> None:
        """Before a new commit-log segment: refuse it (DiskFullError) when it would take the disk above
        diskSpaceWarningLevelRatio, the rest being for consume queues and index; the disk is marked full
        when the log needs it now (not for the one made `ahead`: the current one still has room)."""
        config = self.config
        warning = as_ratio(config.disk_space_warning_level_ratio)
        if room_for(config.commit_log_dir, nbytes, as_ratio(config.disk_space_clean_forcibly_ratio)):
            return
        self.tight = True
        if room_for(config.commit_log_dir, nbytes, warning):
            return
        if ahead:
            raise DiskFullError(f"no room ahead for a {nbytes}-byte commit-log segment")
        if not self.disk_full:
            log.error(
                "no room for a %d-byte commit-log segment under the disk-space warning ratio %.2f: "
                "the store refuses writes until space is freed",
                nbytes,
                warning,
            )
        self.disk_full = True
        raise DiskFullError(f"the disk has no room for a {nbytes}-byte commit-log segment")

    def check_queue_file(self, nbytes: int, ahead: bool) -> None:
        """Before a new consume-queue file: past the clean-forcibly ratio with it, the store turns
        `tight` (each put then checks its queue first), and one the disk cannot hold marks it full."""
        config = self.config
        if room_for(config.store_path_root_dir, nbytes, as_ratio(config.disk_space_clean_forcibly_ratio)):
            return
        self.tight = True
        if not room_for(config.store_path_root_dir, nbytes, 1.0):
            self.disk_full = True

    def queue_has_room(self, topic: str, queue_id: int, entries: int) -> bool:
        """Whether the consume queue of a put can take its `entries`: in its newest file, or in a new one
        the disk has room for. Checked before the append on a tight disk (a record whose queue entry
        cannot be written would be in the log but never pulled); False marks the disk full."""
        cq = self.queues.find(topic, queue_id)
        tail = cq.files.tail if cq is not None else None
        if tail is not None and tail.wrote_position + entries * CQ_ENTRY_SIZE <= tail.file_size:
            return True
        config = self.config
        if room_for(config.store_path_root_dir, config.consume_queue_file_size, 1.0):
            return True
        if not self.disk_full:
            log.error("no room for a consume-queue file of %s/%d: the store refuses writes", topic, queue_id)
        self.disk_full = True
        return False

    def clean_expired_files(self, now_ms: int | None = None, *, force: bool = False) -> CleanResult:
        config = self.config
        now = self.clock.now_ms() if now_ms is None else now_ms
        ratio, space_full, clean_immediately = self.check_disk()
        result = CleanResult(disk_ratio=ratio, disk_full=self.disk_full)
        if force or space_full or self._is_delete_hour(now):
            reserved_ms = config.file_reserved_time * 3_600_000
            at_once = config.clean_file_forcibly_enable and clean_immediately

            def expired(f: MappedFile) -> bool:
                return at_once or now >= f.last_modified_ms() + reserved_ms

            with self.commit_log.put_lock:
                result.commit_log_files = self.commit_log.files.delete_first_files(
                    expired, DELETE_FILES_BATCH_MAX
                )
        min_offset = self.commit_log.min_offset
        if min_offset == self._cleaned_min_offset:
            return result
        self._cleaned_min_offset = min_offset
        for cq in self.queues.snapshot():
            result.consume_queue_files += cq.delete_expired_files(min_offset)
        if self.key_index is not None:
            result.index_files = self.key_index.delete_expired_files(min_offset)
        return result
