"""SubscriptionGroupManager: consumer group settings (subscriptionGroup.json), auto-created on demand.

A group's config decides retry queue count, max reconsume times, whether consumption is enabled and
whether membership changes are notified. Default groups of fact sheet 7.10 exist from the start.

This module knows nothing of sockets or request codes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from orbitmq.broker.config_files import dumps, read_json_file
from orbitmq.broker.config_writer import ConfigWriter, persist_json
from orbitmq.broker.topics import DataVersion
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.protocol.bodies import SubscriptionGroupConfig

log = logging.getLogger(__name__)

DEFAULT_GROUPS = ("TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP")
BROADCAST_GROUPS = ("CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER")


class SubscriptionGroupManager:
    def __init__(self, config_dir: Path, *, auto_create: bool, clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = config_dir / "subscriptionGroup.json"
        self.writer: ConfigWriter | None = None  # set by the broker: writes off the event loop
        self.auto_create = auto_create
        self._clock = clock
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = DataVersion(0, clock.now_ms())
        for name in DEFAULT_GROUPS:
            self.table[name] = SubscriptionGroupConfig(name)
        for name in BROADCAST_GROUPS:
            self.table[name] = SubscriptionGroupConfig(name, consume_broadcast_enable=True)

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; auto-created (and persisted) when enabled, else None if unknown."""
        found = self.table.get(group)
        if found is None and self.auto_create:
            found = SubscriptionGroupConfig(group)
            self.table[group] = found
            log.info("auto-created subscription group %s", group)
            self._changed()
        return found

    def update(self, cfg: SubscriptionGroupConfig) -> None:
        self.table[cfg.group_name] = cfg
        self._changed()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self._changed()
        return True

    def _changed(self) -> None:
        self.data_version.bump(self._clock.now_ms())
        self.persist()

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json_dict(),
            "subscriptionGroupTable": {n: g.to_obj() for n, g in self.table.items()},
        }

    def load(self) -> None:
        data = read_json_file(self.path)
        if not isinstance(data, dict):
            return
        for name, raw in (data.get("subscriptionGroupTable") or {}).items():
            try:
                self.table[str(name)] = SubscriptionGroupConfig.from_any(raw)
            except (TypeError, ValueError, AttributeError) as exc:
                log.warning("subscriptionGroup.json: skipping %s (%s)", name, exc)
        if isinstance(data.get("dataVersion"), dict):
            self.data_version = DataVersion.from_json_dict(data["dataVersion"])

    def persist(self) -> None:
        persist_json(self.writer, self.path, dumps(self.to_json_dict()))
