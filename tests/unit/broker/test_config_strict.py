"""broker.conf / namesrv.conf / store keys read as RocketMQ's properties2Object reads them (value trimmed,
Java's parsers), except that what RocketMQ silently ignores is refused here with the key named, and
keys orbitmq does not act on get one warning line each (with a "did you mean" for typos)."""

from __future__ import annotations

import logging

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.common.errors import StoreError
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.protocol.config_values import (
    ConfigValueError,
    did_you_mean,
    java_trim,
    parse_double,
)
from orbitmq.store.config import StoreConfig


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("flushDiskType", "SYNCFLUSH", "ASYNC_FLUSH, SYNC_FLUSH"),
        ("flushDiskType", "sync_flush", "ASYNC_FLUSH, SYNC_FLUSH"),  # Enum.valueOf is case-sensitive
        ("brokerRole", "MASTER", "ASYNC_MASTER, SYNC_MASTER, SLAVE"),
    ],
)
def test_invalid_enum_values_list_the_allowed_ones(key: str, value: str, allowed: str) -> None:
    with pytest.raises(ConfigValueError) as info:
        BrokerConfig.from_properties({key: value})
    assert str(info.value) == f"{key}={value!r}: not one of {allowed}"


@pytest.mark.parametrize(
    "text",
    ["1_000", "1 000", "12abc", "0x10", "1.5", "", "+", "99999999999999999999"],
)
def test_numbers_take_only_what_javas_parser_takes(text: str) -> None:
    with pytest.raises(ConfigValueError, match=r"listenPort=.*Long\.parseLong"):
        BrokerConfig.from_properties({"listenPort": text})


def test_numbers_like_java_including_trimming_and_unicode_digits() -> None:
    # properties2Object trims (String.trim: chars <= U+0020) before Integer.parseInt
    assert BrokerConfig.from_properties({"listenPort": " \t10911 \x00"}).listen_port == 10911
    assert BrokerConfig.from_properties({"listenPort": "+10911"}).listen_port == 10911
    # Character.digit accepts every Unicode decimal digit, so Java reads "١٠٩١١" (and fullwidth
    # "１２") as numbers too: orbitmq means what RocketMQ means
    assert BrokerConfig.from_properties({"listenPort": "١٠٩١١"}).listen_port == 10911
    assert BrokerConfig.from_properties({"listenPort": "１２"}).listen_port == 12
    assert java_trim("\u00a0x\u00a0") == "\u00a0x\u00a0"  # NBSP is above U+0020: Java keeps it


def test_booleans_are_boolean_parse_boolean_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    assert BrokerConfig.from_properties({"autoCreateTopicEnable": "TRUE "}).auto_create_topic_enable is True
    assert not caplog.records
    config = BrokerConfig.from_properties({"autoCreateTopicEnable": "flase"})
    assert config.auto_create_topic_enable is False
    assert [r.getMessage() for r in caplog.records] == [
        "broker config: autoCreateTopicEnable='flase' is read as false (only 'true', in any case, is true)"
    ]


def test_unknown_keys_warn_once_each_with_did_you_mean(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    config = BrokerConfig.from_properties(
        {"brokerRolee": "SLAVE", "sendMessageThreadPoolNums": "4", "zzzTotallyNew": "1"}
    )
    assert config.broker_role == "ASYNC_MASTER"  # the typo changed nothing
    assert config.extra == {"brokerRolee": "SLAVE", "sendMessageThreadPoolNums": "4", "zzzTotallyNew": "1"}
    assert [r.getMessage() for r in caplog.records] == [
        "broker config: unknown key brokerRolee (did you mean brokerRole?), ignored",
        "broker config: sendMessageThreadPoolNums is a RocketMQ key orbitmq does not use (ignored)",
        "broker config: unknown key zzzTotallyNew, ignored",
    ]


def test_store_keys_are_checked_when_the_broker_config_is_read() -> None:
    with pytest.raises(ConfigValueError, match="flushIntervalCommitLog='5OO'"):
        BrokerConfig.from_properties({"flushIntervalCommitLog": "5OO"})
    with pytest.raises(ConfigValueError, match=r"diskSpaceCleanForciblyRatio='0\.8x'"):
        BrokerConfig.from_properties({"checkCRCOnRecover": "false", "diskSpaceCleanForciblyRatio": "0.8x"})
    config = StoreConfig.from_properties(
        BrokerConfig.from_properties(
            {"flushIntervalCommitLog": " 250 ", "checkCRCOnRecover": "false"}
        ).store_properties()
    )
    assert config.flush_interval_commit_log == 250
    assert config.check_crc_on_recover is False  # RocketMQ's spelling, capitals and all
    with pytest.raises(StoreError, match="maxMessageSize"):
        StoreConfig.from_properties({"maxMessageSize": "4 MiB"})


def test_a_bad_value_leaves_the_config_unchanged() -> None:
    config = BrokerConfig()
    with pytest.raises(ConfigValueError):
        config.update({"listenPort": "7", "brokerRole": "BOSS"})
    assert config.listen_port == 10911


def test_java_doubles() -> None:
    assert parse_double(" 0.85 ") == 0.85
    assert parse_double("1e2") == 100.0
    assert parse_double("2d") == 2.0
    for bad in ("1_0", "0,5", "", "1e", "٣"):
        with pytest.raises(ValueError):
            parse_double(bad)


def test_did_you_mean() -> None:
    known = ["brokerRole", "brokerName", "flushDiskType"]
    assert did_you_mean("flushdisktype", known) == "flushDiskType"
    assert did_you_mean("brokerNmae", known) == "brokerName"
    assert did_you_mean("nothingLikeIt", known) is None


def test_namesrv_config_is_strict_too(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError, match="listenPort='98_76'"):
        NamesrvConfig.from_properties({"listenPort": "98_76"})
    config = NamesrvConfig.from_properties({"listenPort": " 9877", "orderMessageEnabel": "true"})
    assert config.listen_port == 9877
    assert [r.getMessage() for r in caplog.records] == [
        "namesrv config: unknown key orderMessageEnabel (did you mean orderMessageEnable?), ignored"
    ]
