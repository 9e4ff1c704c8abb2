"""TopicConfigManager: the broker's topic table (topics.json), system topics, auto-creation, DataVersion.

System topics (fact sheet 7.10) first, topics.json over them; the send path's auto-creation copies the
TBW102 template when it is inheritable; every change bumps the DataVersion and is persisted, and
`on_created` listeners let the broker re-register at once.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.config_files import dumps, read_json_file
from orbitmq.broker.config_writer import ConfigWriter, persist_json
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.message.validation import topic_problem
from orbitmq.protocol.perm import PERM_INHERIT, PERM_READ, PERM_WRITE, is_inherited

log = logging.getLogger(__name__)

TBW102 = "TBW102"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SCHEDULE_QUEUE_NUMS = 18

# Topics a producer may never write to directly (NO_PERMISSION).
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)


def validate_topic_name(topic: str) -> str | None:
    """None if the name is valid, else the reason (RocketMQ's TopicValidator rules; one shared check)."""
    return topic_problem(topic)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


# Frozen: a change is a new object in the table (send processors keep what they read of a config for as
# long as the table holds the same object).
@dataclass(slots=True, frozen=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_json_dict(cls, d: dict[str, Any]) -> TopicConfig:
        return cls(
            topic_name=str(d["topicName"]),
            read_queue_nums=int(d.get("readQueueNums", 16)),
            write_queue_nums=int(d.get("writeQueueNums", 16)),
            perm=int(d.get("perm", 6)),
            topic_filter_type=str(d.get("topicFilterType", "SINGLE_TAG")),
            topic_sys_flag=int(d.get("topicSysFlag", 0)),
            order=bool(d.get("order", False)),
        )


@dataclass(slots=True)
class DataVersion:
    counter: int = 0
    timestamp: int = 0

    def bump(self, now_ms: int) -> None:
        self.counter += 1
        self.timestamp = now_ms

    def to_json_dict(self) -> dict[str, int]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_json_dict(cls, d: dict[str, Any]) -> DataVersion:
        return cls(int(d.get("counter", 0)), int(d.get("timestamp", 0)))


class TopicConfigManager:
    def __init__(self, config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._config = config
        self.writer: ConfigWriter | None = None  # set by the broker: writes off the event loop
        self._clock = clock
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion(0, clock.now_ms())
        self._system_topics: set[str] = set()
        self._on_created: list[Callable[[TopicConfig], None]] = []
        self._put_system_topics()

    @property
    def path(self) -> Path:
        return self._config.config_dir / "topics.json"

    # ---------------------------------------------------------------------------------- lifecycle
    def _put_system_topics(self) -> None:
        c = self._config
        system: list[TopicConfig] = [TopicConfig(SELF_TEST_TOPIC, 1, 1)]
        if c.auto_create_topic_enable:
            system.append(
                TopicConfig(
                    TBW102,
                    c.default_topic_queue_nums,
                    c.default_topic_queue_nums,
                    PERM_INHERIT | PERM_READ | PERM_WRITE,
                )
            )
        system.append(TopicConfig(BENCHMARK_TOPIC, 1024, 1024))
        cluster_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if c.cluster_topic_enable else 0)
        system.append(TopicConfig(c.broker_cluster_name, 16, 16, cluster_perm))
        broker_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if c.broker_topic_enable else 0)
        system.append(TopicConfig(c.broker_name, 1, 1, broker_perm))
        system.append(TopicConfig(OFFSET_MOVED_EVENT, 1, 1))
        system.append(TopicConfig(SCHEDULE_TOPIC, SCHEDULE_QUEUE_NUMS, SCHEDULE_QUEUE_NUMS))
        if c.trace_topic_enable:
            system.append(TopicConfig(c.msg_trace_topic_name, 1, 1))
        system.append(TopicConfig(f"{c.broker_cluster_name}_REPLY_TOPIC", 1, 1))
        for tc in system:
            # (interned: requests carry the interned name, see message/validation, and match it by identity)
            self.table[sys.intern(tc.topic_name)] = tc
            self._system_topics.add(tc.topic_name)

    def load(self) -> None:
        data = read_json_file(self.path)
        if not isinstance(data, dict):
            return
        for name, raw in (data.get("topicConfigTable") or {}).items():
            try:
                tc = TopicConfig.from_json_dict(raw)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("topics.json: skipping topic %s (%s)", name, exc)
                continue
            self.table[sys.intern(tc.topic_name)] = tc  # (interned: see the system topics above)
        if isinstance(data.get("dataVersion"), dict):
            self.data_version = DataVersion.from_json_dict(data["dataVersion"])

    def persist(self) -> None:
        persist_json(self.writer, self.path, dumps(self.wrapper_dict()))

    def wrapper_dict(self, topics: Iterable[TopicConfig] | None = None) -> dict[str, Any]:
        """TopicConfigSerializeWrapper: topics.json, GET_ALL_TOPIC_CONFIG and REGISTER_BROKER's payload."""
        chosen = self.table.values() if topics is None else topics
        return {
            "dataVersion": self.data_version.to_json_dict(),
            "topicConfigTable": {tc.topic_name: tc.to_json_dict() for tc in chosen},
        }

    def add_created_listener(self, listener: Callable[[TopicConfig], None]) -> None:
        self._on_created.append(listener)

    # ------------------------------------------------------------------------------------ queries
    def select(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        return (
            topic in self._system_topics
            or topic in NOT_ALLOWED_SEND_TOPICS
            or topic.startswith("rmq_sys_")
            or topic == TBW102
        )

    # ---------------------------------------------------------------------------------- mutations
    def _changed(self, tc: TopicConfig | None, *, created: bool) -> None:
        self.data_version.bump(self._clock.now_ms())
        self.persist()
        if created and tc is not None:
            for listener in self._on_created:
                try:
                    listener(tc)
                except Exception:  # a listener must not break topic creation
                    log.exception("topic created listener failed")

    def create_in_send(
        self, topic: str, default_topic: str, default_queue_nums: int, sys_flag: int
    ) -> TopicConfig | None:
        """Auto-create `topic` from the template `default_topic` (None if not allowed)."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None:
            if default_topic == TBW102 and self._config.auto_create_topic_enable:
                template = TopicConfig(
                    TBW102, self._config.default_topic_queue_nums, self._config.default_topic_queue_nums, 7
                )
            else:
                return None
        if default_topic == TBW102 and not self._config.auto_create_topic_enable:
            return None
        if not is_inherited(template.perm):
            return None
        nums = max(1, min(default_queue_nums, template.write_queue_nums))
        tc = TopicConfig(
            topic,
            read_queue_nums=nums,
            write_queue_nums=nums,
            perm=template.perm & ~PERM_INHERIT,
            topic_filter_type=template.topic_filter_type,
            topic_sys_flag=sys_flag,
        )
        self.table[topic] = tc
        log.info("auto-created topic %s from %s: %s", topic, default_topic, tc)
        self._changed(tc, created=True)
        return tc

    def create_in_send_back(self, topic: str, queue_nums: int, perm: int, sys_flag: int = 0) -> TopicConfig:
        """Retry and DLQ topics: created on demand with a fixed queue count."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        tc = TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=sys_flag)
        self.table[topic] = tc
        log.info("created topic %s: %s", topic, tc)
        self._changed(tc, created=True)
        return tc

    def update(self, tc: TopicConfig) -> None:
        """UPDATE_AND_CREATE_TOPIC: create or replace (the caller re-registers incrementally)."""
        self.table[tc.topic_name] = tc
        self._changed(tc, created=False)

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self._changed(None, created=False)
        return True
