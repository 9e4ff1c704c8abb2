"""BrokerConfig: RocketMQ property names, defaults, unknown keys kept, properties text and delay levels."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig, parse_delay_levels, parse_properties_text


def test_reads_rocketmq_names_and_keeps_unknown_keys(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# a comment\n"
        "brokerClusterName = ClusterX\n"
        "brokerName=broker-b\n"
        "brokerId=0\n"
        "namesrvAddr=127.0.0.1:9876;127.0.0.1:9877\n"
        "listenPort=0\n"
        "brokerIP1=127.0.0.1\n"
        "flushDiskType=SYNC_FLUSH\n"
        "autoCreateTopicEnable=false\n"
        "defaultTopicQueueNums=4\n"
        "messageDelayLevel=1s 2s\n"
        "someFutureKey=hello\n",
        encoding="utf-8",
    )
    config = BrokerConfig.from_file(conf)
    assert config.broker_cluster_name == "ClusterX"
    assert config.broker_name == "broker-b"
    assert config.namesrv_addresses == ["127.0.0.1:9876", "127.0.0.1:9877"]
    assert config.listen_port == 0
    assert config.flush_disk_type == "SYNC_FLUSH"
    assert config.auto_create_topic_enable is False
    assert config.default_topic_queue_nums == 4
    assert config.extra == {"someFutureKey": "hello"}
    props = config.properties()
    assert props["someFutureKey"] == "hello"
    assert props["brokerIP1"] == "127.0.0.1"
    assert props["autoCreateTopicEnable"] == "false"


def test_defaults_are_rocketmq_defaults() -> None:
    config = BrokerConfig()
    assert config.broker_cluster_name == "DefaultCluster"
    assert config.listen_port == 10911
    assert config.default_topic_queue_nums == 8
    assert config.flush_consumer_offset_interval == 5000
    assert config.broker_permission == 6
    assert config.file_reserved_time == 72
    assert config.delete_when == "04"
    assert len(parse_delay_levels(config.message_delay_level)) == 18


def test_bad_values_are_reported_by_name() -> None:
    with pytest.raises(ValueError, match="listenPort"):
        BrokerConfig.from_properties({"listenPort": "abc"})
    # Boolean.parseBoolean: anything but "true" is false (a warning says so, see test_config_strict)
    assert BrokerConfig.from_properties({"autoCreateTopicEnable": "yes"}).auto_create_topic_enable is False


def test_masters_are_forced_to_broker_id_zero() -> None:
    assert BrokerConfig.from_properties({"brokerId": "3"}).broker_id == 0
    slave = BrokerConfig.from_properties({"brokerId": "3", "brokerRole": "SLAVE"})
    assert slave.broker_id == 3 and slave.is_slave


def test_properties_text_parsing() -> None:
    text = "a=1\nb : two\nc three\n! bang comment\nd=multi \\\n   line\ne=tab\\tx\n"
    assert parse_properties_text(text) == {
        "a": "1",
        "b": "two",
        "c": "three",
        "d": "multi line",
        "e": "tab\tx",
    }


def test_delay_levels() -> None:
    assert parse_delay_levels("1s 5s 1m 2h 1d") == [1000, 5000, 60000, 7200000, 86400000]
    with pytest.raises(ValueError):
        parse_delay_levels("1x")
    with pytest.raises(ValueError):
        parse_delay_levels("")


def test_generation_counts_changes_and_is_not_a_property() -> None:
    config = BrokerConfig()
    start = config.generation
    config.broker_permission = 4
    assert config.generation == start + 1
    assert config.update({"regionId": "elsewhere"}) == ["regionId"]
    assert config.generation > start + 1
    assert "generation" not in config.properties()
    read = BrokerConfig.from_properties({"generation": "7"})  # no such key: kept verbatim, not applied
    assert read.extra["generation"] == "7" and read.generation != 7
