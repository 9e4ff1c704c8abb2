"""ConsumerOffsetManager and the fastjson-tolerant loading of consumerOffset.json / delay offsets."""

from __future__ import annotations

from pathlib import Path

from orbitmq.broker.consumer_offsets import ConsumerOffsetManager
from orbitmq.broker.subscription_groups import SubscriptionGroupManager
from orbitmq.protocol.bodies import SubscriptionGroupConfig


def test_commit_query_persist_roundtrip(tmp_path: Path) -> None:
    offsets = ConsumerOffsetManager(tmp_path)
    assert offsets.query_offset("g", "T", 0) == -1
    offsets.commit_offset("g", "T", 0, 12)
    offsets.commit_offset("g", "T", 3, 7)
    offsets.commit_offset("h", "U", 1, 1)
    assert offsets.query_offset("g", "T", 0) == 12
    assert offsets.topics_of_group("g") == {"T"}
    assert offsets.groups_of_topic("U") == {"h"}
    offsets.persist()
    loaded = ConsumerOffsetManager(tmp_path)
    loaded.load()
    assert loaded.query_offsets("g", "T") == {0: 12, 3: 7}


def test_loads_java_bare_int_keys(tmp_path: Path) -> None:
    (tmp_path / "consumerOffset.json").write_text(
        '{\n\t"offsetTable":{\n\t\t"T@g":{0:5,1:9}\n\t}\n}', encoding="utf-8"
    )
    offsets = ConsumerOffsetManager(tmp_path)
    offsets.load()
    assert offsets.query_offsets("g", "T") == {0: 5, 1: 9}


def test_remove_group_and_topics(tmp_path: Path) -> None:
    offsets = ConsumerOffsetManager(tmp_path)
    offsets.commit_offset("g", "T", 0, 1)
    offsets.commit_offset("g", "U", 0, 1)
    offsets.commit_offset("h", "T", 0, 1)
    offsets.remove_topics(["U"])
    assert offsets.topics_of_group("g") == {"T"}
    offsets.remove_group("g")
    assert offsets.groups_of_topic("T") == {"h"}


def test_subscription_groups_auto_create_and_reload(tmp_path: Path) -> None:
    groups = SubscriptionGroupManager(tmp_path, auto_create=True)
    assert groups.find("TOOLS_CONSUMER") is not None
    g = groups.find("new-group")
    assert g is not None and g.retry_queue_nums == 1 and g.retry_max_times == 16
    groups.update(SubscriptionGroupConfig("custom", retry_max_times=2, consume_enable=False))
    loaded = SubscriptionGroupManager(tmp_path, auto_create=False)
    loaded.load()
    custom = loaded.find("custom")
    assert custom is not None and custom.retry_max_times == 2 and not custom.consume_enable
    assert loaded.find("never-seen") is None
