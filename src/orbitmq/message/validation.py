"""Input checks shared by producers and brokers: topic and group names, messages, user properties.

Messages and rules follow RocketMQ 4.9.7's client Validators (fact sheet 7.5/7.10); every failure is a
ClientError whose text says what is wrong and what is allowed.
"""

from __future__ import annotations

import re
import sys
from typing import Final

from orbitmq.common.errors import ClientError
from orbitmq.message import properties as P
from orbitmq.message.model import Message

VALID_PATTERN_STR: Final = "^[%|a-zA-Z0-9_-]+$"
TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255
DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
_VALID_NAME: Final = re.compile(r"[%|a-zA-Z0-9_-]+")

# Topics a producer may not send to (the broker answers NO_PERMISSION); plus anything starting rmq_sys_.
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)


# Names already found valid (bounded: cleared when full, so a flood of distinct names costs memory once).
# Process-wide; broker.conf `validNameCacheMaxEntries` sets the bound when a broker starts. Each maps a
# name to its interned string (`sys.intern`): the name guard hands that one object on to the processors,
# so the broker's tables keyed by the same interned name (topic configs, queues, stats; names loaded from
# disk are interned too) find their entry by identity instead of comparing against a key that is cold in
# the CPU's cache, which with a thousand topics costs several cache misses per message.
DEFAULT_VALID_NAMES_MAX: Final = 65536
_valid_names_max = DEFAULT_VALID_NAMES_MAX
valid_topics: Final[dict[str, str]] = {}
valid_groups: Final[dict[str, str]] = {}


def set_valid_names_max(entries: int) -> None:
    """Bound each of the valid-topic and valid-group caches (the broker calls this at start)."""
    global _valid_names_max
    if entries < 1:
        raise ValueError(f"validNameCacheMaxEntries must be positive, not {entries}")
    _valid_names_max = entries
    valid_topics.clear()
    valid_groups.clear()


def _illegal_chars(name: str) -> bool:
    # fullmatch: `$` with re.match would accept a trailing newline. The class is ASCII only, as
    # TopicValidator's 128-entry bitmap is.
    return _VALID_NAME.fullmatch(name) is None


def _remember(cache: dict[str, str], name: str) -> None:
    if len(cache) >= _valid_names_max:
        cache.clear()
    interned = sys.intern(name)
    cache[interned] = interned


def topic_problem(name: str) -> str | None:
    """None if `name` is a legal topic name, else RocketMQ's remark (TopicValidator.validateTopic: the
    broker answers it with SYSTEM_ERROR). Checked once per distinct valid name."""
    if name in valid_topics:
        return None
    if not name or not name.strip():
        return "The specified topic is blank."
    if len(name) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    if _illegal_chars(name):
        return f"The specified topic contains illegal characters, allowing only {VALID_PATTERN_STR}"
    _remember(valid_topics, name)
    return None


def group_problem(name: str) -> str | None:
    """None if `name` is a legal group name, else the client Validators.checkGroup remark (RocketMQ's
    broker does not check groups; orbitmq does, since it builds %RETRY%/%DLQ% topics from them)."""
    if name in valid_groups:
        return None
    if not name or not name.strip():
        return "the specified group is blank"
    if len(name) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}."
    if _illegal_chars(name):
        return (
            f"the specified group[{name[:GROUP_MAX_LENGTH]!r}] contains illegal characters, "
            f"allowing only {VALID_PATTERN_STR}"
        )
    _remember(valid_groups, name)
    return None


def validate_topic(name: str) -> None:
    if name in valid_topics:  # checked before: a producer sends to few topics, many times each
        return
    if not name or not name.strip():
        raise ClientError("The specified topic is blank")
    if len(name) > TOPIC_MAX_LENGTH:
        raise ClientError(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if not _VALID_NAME.fullmatch(name):
        raise ClientError(
            f"The specified topic[{name}] contains illegal characters, allowing only {VALID_PATTERN_STR}"
        )
    _remember(valid_topics, name)


def validate_group(name: str) -> None:
    """The client's Validators.checkGroup, with the remarks the broker gives (`group_problem`)."""
    problem = group_problem(name)
    if problem is not None:
        raise ClientError(problem)


def validate_user_property(name: str, value: str) -> None:
    """What `Message.putUserProperty` allows: no reserved name, no blank name or value, no separators."""
    if name in P.RESERVED:
        raise ClientError(f"The Property<{name}> is used by system, input another please")
    if not name or not name.strip() or not value or not value.strip():
        raise ClientError("The name or value of property can not be null or blank string!")
    _check_property_text(name, value)


def _check_property_text(name: str, value: str) -> None:
    if "\x01" in name or "\x02" in name or "\x02" in value:
        raise ClientError(f"property {name!r} contains a reserved separator character (U+0001 or U+0002)")


def validate_message(
    msg: Message, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, *, check_send_topic: bool = True
) -> None:
    """A producer's checks before sending: topic name (and not a system topic when `check_send_topic`),
    a non-empty body of at most `max_message_size` bytes, property text that keeps the properties string
    parseable."""
    topic = msg.topic
    if topic not in valid_topics:  # a producer sends to few topics, many times each
        validate_topic(topic)
    if check_send_topic and (topic in NOT_ALLOWED_SEND_TOPICS or topic.startswith("rmq_sys_")):
        raise ClientError(f"Sending message to topic[{topic}] is forbidden.")
    body = msg.body
    if body is None:
        raise ClientError("the message body is null")
    size = len(body)
    if size == 0:
        raise ClientError("the message body length is zero")
    if size > max_message_size:
        raise ClientError(f"the message body size over max value, MAX: {max_message_size}")
    for name, value in msg.properties.items():
        _check_property_text(name, value)
