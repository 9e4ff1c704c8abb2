"""The batch body of SEND_BATCH_MESSAGE (fact sheet 5.9): what a client sends, what a broker unpacks.

Each message of the batch is one entry, back to back::

     0 TOTALSIZE int (= 22 + B + P)   4 MAGICCODE int (0)   8 BODYCRC int (0)   12 FLAG int
    16 BODYLENGTH int   20 BODY (B)   20+B PROPERTIESLENGTH short   22+B PROPERTIES (P)

The properties are each message's own (with its UNIQ_KEY, which the producer sets before encoding);
the batch-level ones travel in the request header. MAGICCODE and BODYCRC are ignored by the broker, which
recomputes the CRC. Malformed input raises ClientError with the position and reason.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final, NamedTuple

from orbitmq.common.errors import ClientError
from orbitmq.message import properties as P
from orbitmq.message.model import Message
from orbitmq.message.property_string import encode_properties
from orbitmq.message.record_layout import MAX_PROPERTIES_LENGTH

BATCH_ENTRY_OVERHEAD: Final = 22
RETRY_TOPIC_PREFIX: Final = "%RETRY%"
_HEAD: Final = struct.Struct(">iiiii")
_SHORT: Final = struct.Struct(">h")


class BatchEntry(NamedTuple):
    flag: int
    body: memoryview  # a view into the request body: not copied
    properties: str


def encode_batch(messages: Sequence[Message]) -> bytes:
    """The SEND_BATCH_MESSAGE body of `messages`.

    Checks what RocketMQ's client checks for a batch: at least one message, one topic, no delay level, no
    retry topic, one WAIT value. It does not assign UNIQ_KEYs (the producer does) and does not compress.
    """
    if not messages:
        raise ClientError("a batch needs at least one message")
    topic = messages[0].topic
    wait = messages[0].wait_store_msg_ok
    parts: list[bytes] = []
    append = parts.append
    for i, msg in enumerate(messages):
        if msg.topic != topic:
            raise ClientError(
                f"all messages of a batch need the same topic: message {i} has {msg.topic!r}, not {topic!r}"
            )
        if msg.topic.startswith(RETRY_TOPIC_PREFIX):
            raise ClientError("retry group topics are not supported for batching")
        if msg.delay_level > 0:
            raise ClientError("delay messages are not supported for batching")
        if msg.wait_store_msg_ok != wait:
            raise ClientError("all messages of a batch need the same waitStoreMsgOK (WAIT) value")
        properties = encode_properties(msg.properties).encode()
        if len(properties) > MAX_PROPERTIES_LENGTH:
            raise ClientError(
                f"properties of batch message {i} are {len(properties)} bytes; at most 32767 allowed"
            )
        body = msg.body
        append(_HEAD.pack(BATCH_ENTRY_OVERHEAD + len(body) + len(properties), 0, 0, msg.flag, len(body)))
        append(body)
        append(_SHORT.pack(len(properties)))
        append(properties)
    return b"".join(parts)


def batch_wait_store_msg_ok(properties: str) -> bool:
    """Whether a properties string asks to wait for the store (WAIT absent or not "false")."""
    return f"{P.WAIT}\x01false" not in properties.split("\x02")
