"""A stored (4.x) message as a 5.x `Message`, and the property names the two share.

The reverse of send.py's mapping, as RocketMQ 5's proxy builds it: TAGS -> tag, KEYS -> keys, UNIQ_KEY ->
message id, __SHARDINGKEY -> message group, TIMER_DELIVER_MS -> delivery timestamp; every property that
is not a system one is a user property. Used for transaction check-backs (and, later, received messages).
"""

from __future__ import annotations

import hashlib
from typing import Final

from orbitmq.message import properties as P
from orbitmq.message.model import MessageExt
from orbitmq.proxy.pb import definition_pb2 as pb

SHARDING_KEY: Final = "__SHARDINGKEY"
TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
TRACE_CONTEXT: Final = "TRACE_CONTEXT"
BORN_HOST: Final = "__BORNHOST"
BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
# System property names: never user properties, in either direction.
SYSTEM: Final = P.RESERVED | {
    SHARDING_KEY,
    TIMER_DELIVER_MS,
    TIMER_DELAY_SEC,
    "TIMER_DELAY_MS",
    "__STARTDELIVERTIME",
    TRACE_CONTEXT,
    BORN_HOST,
    BORN_TIMESTAMP,
    P.TRANSACTION_ID,
    P.CHECK_IMMUNITY_TIME_IN_SECONDS,
    P.TRAN_PREPARED_QUEUE_OFFSET,
    P.TRANSACTION_CHECK_TIMES,
}


def message_type(props: dict[str, str]) -> pb.MessageType:
    if props.get(P.TRAN_MSG) == "true":
        return pb.TRANSACTION
    if P.DELAY in props or TIMER_DELIVER_MS in props or TIMER_DELAY_SEC in props:
        return pb.DELAY
    return pb.FIFO if SHARDING_KEY in props else pb.NORMAL


def to_pb(message: MessageExt) -> pb.Message:
    """`message` (decoded from its record, body decompressed) as a 5.x Message."""
    props = message.properties
    out = pb.Message(body=message.body)
    out.topic.name = message.topic
    for key, value in props.items():
        if key not in SYSTEM:
            out.user_properties[key] = value
    system = out.system_properties
    tag = props.get(P.TAGS)
    if tag is not None:
        system.tag = tag
    keys = props.get(P.KEYS)
    if keys:
        system.keys.extend(k for k in keys.split(" ") if k)
    system.message_id = props.get(P.UNIQ_KEY) or message.msg_id
    system.body_digest.type = pb.MD5
    system.body_digest.checksum = hashlib.md5(message.body).hexdigest().upper()
    system.body_encoding = pb.IDENTITY
    system.message_type = message_type(props)
    system.born_timestamp.FromMilliseconds(message.born_timestamp)
    system.born_host = props.get(BORN_HOST) or message.born_host
    system.store_timestamp.FromMilliseconds(message.store_timestamp)
    system.store_host = message.store_host
    deliver = props.get(TIMER_DELIVER_MS)
    if deliver is not None and deliver.isdigit():
        system.delivery_timestamp.FromMilliseconds(int(deliver))
    group = props.get(SHARDING_KEY)
    if group is not None:
        system.message_group = group
    system.queue_id = message.queue_id
    system.queue_offset = message.queue_offset
    system.delivery_attempt = message.reconsume_times + 1
    trace = props.get(TRACE_CONTEXT)
    if trace is not None:
        system.trace_context = trace
    return out
