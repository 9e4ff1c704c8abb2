"""Topic, group and message checks shared by producers and brokers."""

from __future__ import annotations

import pytest

from orbitmq.common.errors import ClientError
from orbitmq.message.model import Message
from orbitmq.message.validation import (
    validate_group,
    validate_message,
    validate_topic,
    validate_user_property,
)


@pytest.mark.parametrize("name", ["TopicTest", "a", "%RETRY%group_1", "x|y-z", "t" * 127])
def test_valid_topics(name: str) -> None:
    validate_topic(name)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "blank"),
        ("   ", "blank"),
        ("t" * 128, "longer than topic max length 127"),
        ("topic.with.dots", "illegal characters"),
        ("topic\n", "illegal characters"),
        ("tópico", "illegal characters"),
    ],
)
def test_invalid_topics(name: str, reason: str) -> None:
    with pytest.raises(ClientError, match=reason):
        validate_topic(name)


def test_groups_allow_255_chars() -> None:
    validate_group("g" * 255)
    with pytest.raises(ClientError, match="255"):
        validate_group("g" * 256)
    with pytest.raises(ClientError, match="illegal"):
        validate_group("bad group")
    with pytest.raises(ClientError, match="blank"):
        validate_group("")


def test_message_checks() -> None:
    validate_message(Message("T", b"x"), 10)
    with pytest.raises(ClientError, match="length is zero"):
        validate_message(Message("T", b""))
    with pytest.raises(ClientError, match="MAX: 10"):
        validate_message(Message("T", b"x" * 11), 10)
    with pytest.raises(ClientError, match="illegal"):
        validate_message(Message("bad topic", b"x"))
    with pytest.raises(ClientError, match="forbidden"):
        validate_message(Message("SCHEDULE_TOPIC_XXXX", b"x"))
    with pytest.raises(ClientError, match="forbidden"):
        validate_message(Message("rmq_sys_anything", b"x"))
    validate_message(Message("SCHEDULE_TOPIC_XXXX", b"x"), check_send_topic=False)
    with pytest.raises(ClientError, match="separator"):
        validate_message(Message("T", b"x", 0, {"k": "a\x02b"}))


def test_user_properties() -> None:
    validate_user_property("color", "red")
    with pytest.raises(ClientError, match="used by system"):
        validate_user_property("TAGS", "x")
    with pytest.raises(ClientError, match="blank"):
        validate_user_property("k", " ")
    with pytest.raises(ClientError, match="separator"):
        validate_user_property("k\x01", "v")
