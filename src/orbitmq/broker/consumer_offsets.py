"""ConsumerOffsetManager: committed consume offsets per `topic@group` and queue (consumerOffset.json).

Kept in memory, persisted every flushConsumerOffsetInterval and at shutdown. The file's queue-id keys
are written as standard JSON (`{"0":12}`), which Java reads too; Java's bare `{0:12}` loads as well.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from orbitmq.broker.config_files import dumps, read_json_file
from orbitmq.broker.config_writer import ConfigWriter, persist_json

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager:
    def __init__(self, config_dir: Path) -> None:
        self.path = config_dir / "consumerOffset.json"
        self.writer: ConfigWriter | None = None  # set by the broker: writes off the event loop
        self.table: dict[str, dict[int, int]] = {}
        self._dirty = False

    @staticmethod
    def key(topic: str, group: str) -> str:
        return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(self.key(topic, group), {})[queue_id] = offset
        self._dirty = True

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for this queue."""
        queues = self.table.get(self.key(topic, group))
        if queues is None:
            return -1
        return queues.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(self.key(topic, group), {}))

    def _topic_groups(self) -> list[tuple[str, str]]:
        """(topic, group) of every table key."""
        return [
            (topic, group) for topic, _, group in (k.rpartition(TOPIC_GROUP_SEPARATOR) for k in self.table)
        ]

    def topics_of_group(self, group: str) -> set[str]:
        return {topic for topic, g in self._topic_groups() if g == group}

    def groups_of_topic(self, topic: str) -> set[str]:
        return {group for t, group in self._topic_groups() if t == topic}

    def remove_group(self, group: str) -> None:
        for key in [k for k in self.table if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
            del self.table[key]
        self._dirty = True

    def remove_topics(self, topics: Iterable[str]) -> None:
        drop = set(topics)
        for key in [k for k in self.table if k.rpartition(TOPIC_GROUP_SEPARATOR)[0] in drop]:
            del self.table[key]
        self._dirty = True

    # -------------------------------------------------------------------------------- persistence
    def to_json_dict(self) -> dict[str, Any]:
        return {"offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in self.table.items()}}

    def load(self) -> None:
        data = read_json_file(self.path)
        if not isinstance(data, dict):
            return
        for key, queues in (data.get("offsetTable") or {}).items():
            if not isinstance(queues, dict):
                continue
            try:
                self.table[str(key)] = {int(q): int(o) for q, o in queues.items()}
            except (TypeError, ValueError) as exc:
                log.warning("consumerOffset.json: skipping %s (%s)", key, exc)

    def persist(self) -> None:
        persist_json(self.writer, self.path, dumps(self.to_json_dict()))
        self._dirty = False

    def persist_if_dirty(self) -> None:
        if self._dirty:
            self.persist()
