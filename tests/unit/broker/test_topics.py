"""TopicConfigManager: system topics, auto-creation from TBW102, persistence with .bak, DataVersion."""

from __future__ import annotations

import sys
from pathlib import Path

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.topics import SCHEDULE_TOPIC, TBW102, TopicConfig, TopicConfigManager, validate_topic_name
from orbitmq.common.clock import FakeClock


def manager(tmp_path: Path, **props: str) -> TopicConfigManager:
    config = BrokerConfig.from_properties(
        {"storePathRootDir": str(tmp_path), "brokerName": "broker-a", **props}
    )
    return TopicConfigManager(config, clock=FakeClock())


def test_system_topics(tmp_path: Path) -> None:
    topics = manager(tmp_path)
    tbw = topics.select(TBW102)
    assert tbw is not None and tbw.perm == 7 and tbw.write_queue_nums == 8
    schedule = topics.select(SCHEDULE_TOPIC)
    assert schedule is not None and schedule.read_queue_nums == 18
    cluster = topics.select("DefaultCluster")
    assert cluster is not None and cluster.perm == 7 and cluster.read_queue_nums == 16
    assert topics.select("broker-a") is not None
    assert topics.is_system_topic("rmq_sys_anything")
    assert not topics.is_system_topic("orders")
    assert manager(tmp_path, autoCreateTopicEnable="false").select(TBW102) is None


def test_auto_create_from_template_notifies_and_persists(tmp_path: Path) -> None:
    topics = manager(tmp_path)
    created: list[str] = []
    topics.add_created_listener(lambda tc: created.append(tc.topic_name))
    before = topics.data_version.counter
    tc = topics.create_in_send("orders", TBW102, 4, 0)
    assert tc is not None and tc.read_queue_nums == 4 and tc.perm == 6
    assert created == ["orders"]
    assert topics.data_version.counter == before + 1
    again = manager(tmp_path)
    again.load()
    loaded = again.select("orders")
    assert loaded is not None and loaded.write_queue_nums == 4
    assert again.data_version.counter == topics.data_version.counter


def test_auto_create_refused_without_inherit_or_when_disabled(tmp_path: Path) -> None:
    topics = manager(tmp_path)
    topics.update(TopicConfig("template", 4, 4, 6))
    assert topics.create_in_send("x", "template", 4, 0) is None
    assert manager(tmp_path / "b", autoCreateTopicEnable="false").create_in_send("x", TBW102, 4, 0) is None


def test_corrupt_file_falls_back_to_backup(tmp_path: Path) -> None:
    topics = manager(tmp_path)
    topics.update(TopicConfig("first", 2, 2))
    topics.update(TopicConfig("second", 3, 3))  # the .bak now holds "first" only
    topics.path.write_text("{not json", encoding="utf-8")
    again = manager(tmp_path)
    again.load()
    assert again.select("first") is not None
    assert again.select("second") is None


def test_topic_name_validation() -> None:
    assert validate_topic_name("ok_Topic-1|%") is None
    assert validate_topic_name("") is not None
    assert validate_topic_name("bad topic") is not None
    assert validate_topic_name("x" * 128) is not None


def test_loaded_topic_names_are_interned(tmp_path: Path) -> None:
    # Requests carry interned names (protocol/name_guard): the table's keys read from topics.json must be
    # the same objects, so a send finds its topic by identity.
    topics = manager(tmp_path)
    topics.update(TopicConfig("".join(["loaded", "_topic"]), 2, 2))
    again = manager(tmp_path)
    again.load()
    key = next(k for k in again.table if k == "loaded_topic")
    assert key is sys.intern("".join(["loaded", "_topic"]))
