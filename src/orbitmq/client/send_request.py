"""What one send puts on the wire, before any I/O: the prepared body and properties of a message
(UNIQ_KEY, compression, retry-topic fields moved to the header), the SEND_MESSAGE_V2 header, a checked
batch body; and the queue selectors of ordered sends. Used by producer.py (compiled with it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from orbitmq.common.errors import ClientError
from orbitmq.message import properties as P
from orbitmq.message.codec import (
    UniqueIdGenerator,
    compress_body,
    encode_batch,
    encode_properties,
    java_string_hash,
)
from orbitmq.message.model import Message, MessageQueue
from orbitmq.message.validation import validate_user_property
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.client import RemotingClient
from orbitmq.transport.connection import ResponseCallback

RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DEFAULT_TOPIC: Final = "TBW102"

MessageQueueSelector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]

_ID_GENERATOR: Final = UniqueIdGenerator()
DEFAULT_MAX_HEADER_TEMPLATES = 4096  # Producer(max_header_templates=...)


class Prepared:
    """One message ready to send: its (compressed) body, sys flag, properties text and retry fields.

    A plain class, not a NamedTuple: compiled, its constructor and fields are native (a NamedTuple's
    generated `__new__` stays an interpreted call per message)."""

    __slots__ = ("body", "max_reconsume_times", "properties", "reconsume_times", "sys_flag")

    def __init__(
        self,
        body: bytes,
        sys_flag: int,
        properties: str,
        reconsume_times: int,
        max_reconsume_times: int | None,
    ) -> None:
        self.body = body
        self.sys_flag = sys_flag
        self.properties = properties
        self.reconsume_times = reconsume_times
        self.max_reconsume_times = max_reconsume_times

    def with_sys_flag(self, sys_flag: int) -> Prepared:
        return Prepared(self.body, sys_flag, self.properties, self.reconsume_times, self.max_reconsume_times)


class Outgoing:
    """What one send puts on the wire, whichever attempt carries it: its topic, message id (a batch's
    ids joined by commas), prepared body and properties, message flag, and whether it is a batch.
    (A plain class for the reason Prepared is one: made once per blocking send.)"""

    __slots__ = ("batch", "flag", "msg_id", "prepared", "topic")

    def __init__(self, topic: str, msg_id: str, prepared: Prepared, flag: int, batch: bool) -> None:
        self.topic = topic
        self.msg_id = msg_id
        self.prepared = prepared
        self.flag = flag
        self.batch = batch


def prepare_message(msg: Message, compress_over: int, compress_level: int) -> Prepared:
    """Body (compressed from `compress_over` bytes on), sys flag and properties of one message; a
    UNIQ_KEY is added when it has none."""
    props = msg.properties  # (read once: an attribute of an interpreted object costs a lookup each time)
    if P.UNIQ_KEY not in props:
        props[P.UNIQ_KEY] = _ID_GENERATOR.next()
    body, sys_flag = msg.body, 0
    if len(body) >= compress_over:
        body, sys_flag = compress_body(body, compress_level)
    reconsume, max_reconsume = 0, None
    if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        # Fact sheet 3.1: these travel in header fields j/l instead of properties.
        props = dict(props)
        reconsume = int(props.pop(P.RECONSUME_TIME, "0") or 0)
        max_value = props.pop(P.MAX_RECONSUME_TIMES, None)
        max_reconsume = int(max_value) if max_value else None
    return Prepared(body, sys_flag, encode_properties(props), reconsume, max_reconsume)


def encode_checked_batch(
    msgs: list[Message], validate: Callable[[Message], None], max_message_size: int
) -> tuple[str, bytes, str]:
    """(topic, body, properties) of one SEND_BATCH_MESSAGE for `msgs`: each passes `validate` and the
    batch rules (one topic, no delay, no retry topic, one waitStoreMsgOK); a UNIQ_KEY added where
    missing."""
    topic = msgs[0].topic
    wait = msgs[0].wait_store_msg_ok
    for m in msgs:
        validate(m)
        if m.topic != topic:
            raise ClientError("The topic of the messages in one batch should be the same")
        if m.delay_level > 0:
            raise ClientError("TimeDelayLevel is not supported for batching")
        if m.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise ClientError("Retry Group is not supported for batching")
        if m.wait_store_msg_ok != wait:
            raise ClientError("The waitStoreMsgOK of the messages in one batch should the same")
        if P.UNIQ_KEY not in m.properties:
            m.properties[P.UNIQ_KEY] = _ID_GENERATOR.next()
    body = encode_batch(msgs)
    if len(body) > max_message_size:
        raise ClientError(f"the batch body size {len(body)} is over max value, MAX: {max_message_size}")
    batch_props = encode_properties({P.WAIT: "true" if wait else "false"})
    return topic, body, batch_props


def select_by_hash(mqs: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """SelectMessageQueueByHash: the queue at |hashCode(arg)| mod n, so one key always lands on one queue
    (Java's String.hashCode for strings, the value itself for ints)."""
    h = arg if isinstance(arg, int) else java_string_hash(str(arg))
    return mqs[abs(h) % len(mqs)]  # Java: |h % n|, the same value as |h| % n


def put_user_property(msg: Message, name: str, value: str) -> Message:
    """Set a user property; reserved names (TAGS, KEYS, UNIQ_KEY, ...) and blank text are refused."""
    validate_user_property(name, value)
    msg.properties[name] = value
    return msg


def send_header_v2(
    *,
    group: str,
    topic: str,
    queue_id: int,
    sys_flag: int,
    born_timestamp: int,
    flag: int,
    properties: str,
    broker_name: str,
    reconsume_times: int = 0,
    max_reconsume_times: int | None = None,
    batch: bool = False,
    default_topic: str = DEFAULT_TOPIC,
    default_topic_queue_nums: int = 4,
) -> dict[str, str]:
    """SendMessageRequestHeaderV2 ext fields (fact sheet 3.1, short names a..n)."""
    header = {
        "a": group,
        "b": topic,
        "c": default_topic,
        "d": str(default_topic_queue_nums),
        "e": str(queue_id),
        "f": str(sys_flag),
        "g": str(born_timestamp),
        "h": str(flag),
        "i": properties,
        "j": str(reconsume_times),
        "k": "false",
        "m": "true" if batch else "false",
        "n": broker_name,
    }
    if max_reconsume_times is not None:
        header["l"] = str(max_reconsume_times)
    return header


class HeaderTemplates:
    """SEND_MESSAGE_V2 headers from per-queue templates: a copy of the template, then only the
    per-message fields (building all 13 fields with str() each time cost more). The key holds every
    input a template depends on; at most `max_entries` are kept, cleared whole when full."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ClientError(f"max_header_templates must be positive, not {max_entries}")
        self.max_entries = max_entries
        self._templates: dict[tuple[str, str, int, bool, str, str, int], dict[str, str]] = {}

    def __len__(self) -> int:
        return len(self._templates)

    def header(
        self,
        mq: MessageQueue,
        topic: str,
        prepared: Prepared,
        flag: int,
        batch: bool,
        *,
        group: str,
        default_topic: str,
        default_topic_queue_nums: int,
        born_timestamp: int,
    ) -> dict[str, str]:
        """The header of one send of `prepared` (its properties, sys flag and retry fields) to `mq`."""
        key = (topic, mq.broker_name, mq.queue_id, batch, group, default_topic, default_topic_queue_nums)
        template = self._templates.get(key)
        if template is None:
            if len(self._templates) >= self.max_entries:
                self._templates.clear()
            template = self._templates[key] = send_header_v2(
                group=group,
                topic=topic,
                queue_id=mq.queue_id,
                sys_flag=0,
                born_timestamp=0,
                flag=0,
                properties="",
                broker_name=mq.broker_name,
                batch=batch,
                default_topic=default_topic,
                default_topic_queue_nums=default_topic_queue_nums,
            )
        header = template.copy()
        if prepared.sys_flag:
            header["f"] = str(prepared.sys_flag)
        header["g"] = str(born_timestamp)
        if flag:
            header["h"] = str(flag)
        header["i"] = prepared.properties
        if prepared.reconsume_times:
            header["j"] = str(prepared.reconsume_times)
        if prepared.max_reconsume_times is not None:
            header["l"] = str(prepared.max_reconsume_times)
        return header


# A reply message's property (MSG_TYPE=reply) as it appears in the properties string.
REPLY_MARK: Final = P.MSG_TYPE + "\x01reply"
_SEND_MESSAGE_V2: Final[int] = RequestCode.SEND_MESSAGE_V2
_SEND_REPLY_MESSAGE_V2: Final[int] = RequestCode.SEND_REPLY_MESSAGE_V2
_SEND_BATCH_MESSAGE: Final[int] = RequestCode.SEND_BATCH_MESSAGE


def send_code(header: dict[str, str], batch: bool) -> int:
    """SEND_MESSAGE_V2 or a batch; a reply message (MSG_TYPE=reply) goes as SEND_REPLY_MESSAGE_V2, as
    RocketMQ's producer sends it."""
    if batch:
        return _SEND_BATCH_MESSAGE
    if REPLY_MARK in header.get("i", ""):
        return _SEND_REPLY_MESSAGE_V2
    return _SEND_MESSAGE_V2


def start_send(
    remoting: RemotingClient,
    addr: str,
    body: bytes,
    header: dict[str, str],
    *,
    timeout: float,
    callback: ResponseCallback,
) -> bool:
    """One send on the pooled connection to `addr` without a coroutine (`MQClientAPI.start_send_message`;
    compiled, the producer's per-message path calls it directly). False, with nothing sent, when that
    connection is not open or its writes are paused."""
    request = RemotingCommand.request(send_code(header, False), header, body)
    return remoting.invoke_callback(addr, request, timeout, callback)
