"""SendMessage: 5.x messages checked as RocketMQ 5's proxy checks them, then stored by the broker's own
send processor (SEND_MESSAGE_V2 over the client's local channel), so 4.x consumers read them as any.

What maps where (RocketMQ 5's proxy does the same): tag -> TAGS, keys -> KEYS, message id -> UNIQ_KEY,
message group -> __SHARDINGKEY (and the group's queue), a delivery timestamp -> TIMER_DELIVER_MS (the
broker's timer wheel delivers it; the answer carries its recall handle, RecallMessage takes it back), a
transaction -> TRAN_MSG and a prepared sys flag, the topic as producer group (PGROUP). With
timerWheelEnable=false a delivery timestamp gets the first delay level at or after its time instead.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from orbitmq.message import properties as P
from orbitmq.message.property_string import encode_properties
from orbitmq.message.sysflag import COMPRESSED_FLAG, TRANSACTION_PREPARED_TYPE
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.perm import is_writeable
from orbitmq.proxy.backend import LocalBroker
from orbitmq.proxy.convert import (
    BORN_HOST,
    BORN_TIMESTAMP,
    SHARDING_KEY,
    SYSTEM,
    TIMER_DELIVER_MS,
    TRACE_CONTEXT,
)
from orbitmq.proxy.local_channel import LocalChannel
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.queue_select import QueueSelector
from orbitmq.proxy.route import check_topic, find_topic
from orbitmq.proxy.status import Code, ProxyError, from_remoting, status
from orbitmq.proxy.transaction import transaction_id
from orbitmq.store.timer_names import decode_recall_handle, out_ms, recall_handle

DEFAULT_TOPIC = "TBW102"  # the template topic of auto-created topics (createTopicKey)
RECALL_MESSAGE = 370  # RocketMQ 5's remoting request code, and its answer to a refused recall
ILLEGAL_OPERATION = 604


@dataclass(frozen=True, slots=True)
class SendLimits:
    """RocketMQ 5's limits on what a message carries (ProxyConfig / the broker's timerMaxDelaySec)."""

    max_user_property_size: int = 16 * 1024
    max_user_properties: int = 128
    max_message_group_size: int = 64
    max_delay_ms: int = 3 * 24 * 3600 * 1000
    max_transaction_recovery_s: int = 3600
    request_timeout_s: float = 10.0


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


class Sender:
    def __init__(self, broker: LocalBroker, limits: SendLimits | None = None) -> None:
        self.broker = broker
        self.limits = limits or SendLimits()
        self.queues = QueueSelector()

    async def send(self, channel: LocalChannel, request: spb.SendMessageRequest) -> spb.SendMessageResponse:
        messages = request.messages
        if not messages:
            raise ProxyError(Code.MESSAGE_CORRUPTED, "no message to send")
        topic = check_topic(messages[0].topic)
        config = find_topic(self.broker, topic)
        if not is_writeable(config.perm):
            raise ProxyError(Code.FORBIDDEN, f"topic {topic} is not writable")
        built = [self.build(message, topic) for message in messages]
        group = messages[0].system_properties.message_group if len(messages) == 1 else ""
        queue_id = self.queues.select(topic, config.write_queue_nums, group)
        entries = [await self._store(channel, topic, queue_id, item) for item in built]
        return summarize(entries)

    def build(self, message: pb.Message, topic: str) -> tuple[dict[str, str], int, int, bytes]:
        """(properties, sys flag, born timestamp ms, body) of one message, or ProxyError."""
        if message.topic.name != topic:
            raise ProxyError(Code.MESSAGE_CORRUPTED, "the messages of one request name different topics")
        body = message.body
        if not body:
            raise ProxyError(Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
        max_size = self.broker.config.max_message_size
        if max_size > 0 and len(body) > max_size:
            raise ProxyError(Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {max_size}")
        system = message.system_properties
        props = self._user_properties(message)
        if system.message_id.strip() == "":
            raise ProxyError(Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
        props[P.UNIQ_KEY] = system.message_id
        sys_flag = COMPRESSED_FLAG if system.body_encoding == pb.GZIP else 0
        if system.message_type == pb.TRANSACTION:
            sys_flag |= TRANSACTION_PREPARED_TYPE
            props[P.TRAN_MSG] = "true"
            if system.HasField("orphaned_transaction_recovery_duration"):
                seconds = system.orphaned_transaction_recovery_duration.seconds
                most = self.limits.max_transaction_recovery_s
                if seconds > most:
                    raise ProxyError(Code.BAD_REQUEST, f"the transaction recovery time exceeds {most} s")
                props[P.CHECK_IMMUNITY_TIME_IN_SECONDS] = str(seconds)
        if system.HasField("delivery_timestamp"):
            self._delay(props, system.delivery_timestamp.ToMilliseconds())
        props[P.RECONSUME_TIME] = str(system.delivery_attempt)
        props[P.PGROUP] = topic  # RocketMQ 5: the topic is the producer group (transaction checks)
        if system.HasField("message_group") and system.message_group:
            props[SHARDING_KEY] = self._check_group(system.message_group)
        if system.HasField("trace_context") and system.trace_context:
            props[TRACE_CONTEXT] = system.trace_context
        if system.born_host.strip():
            props[BORN_HOST] = system.born_host
        born_ms = system.born_timestamp.ToMilliseconds() if system.HasField("born_timestamp") else 0
        if born_ms > 0:
            props[BORN_TIMESTAMP] = str(born_ms)
        return props, sys_flag, born_ms or int(time.time() * 1000), body

    def _user_properties(self, message: pb.Message) -> dict[str, str]:
        limits = self.limits
        user = message.user_properties
        if len(user) > limits.max_user_properties:
            raise ProxyError(
                Code.MESSAGE_PROPERTIES_TOO_LARGE,
                f"too many user properties, max is {limits.max_user_properties}",
            )
        size = 0
        props: dict[str, str] = {}
        for key, value in user.items():
            if key in SYSTEM:
                raise ProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}")
            if not key or _has_control(key) or _has_control(value) or "\x01" in key or "\x02" in value:
                raise ProxyError(
                    Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property {key!r} is empty or has control characters"
                )
            size += len(key.encode()) + len(value.encode())
            props[key] = value
        system = message.system_properties
        tag = system.tag if system.HasField("tag") else ""
        if tag:
            if not tag.strip() or "|" in tag or _has_control(tag):
                raise ProxyError(
                    Code.ILLEGAL_MESSAGE_TAG, "tag cannot be blank, contain '|' or control characters"
                )
            props[P.TAGS] = tag
            size += len(tag.encode())
        for key in system.keys:
            if not key.strip() or _has_control(key):
                raise ProxyError(Code.ILLEGAL_MESSAGE_KEY, f"key {key!r} is blank or has control characters")
            size += len(key.encode())
        if system.keys:
            props[P.KEYS] = " ".join(system.keys)
        if size > limits.max_user_property_size:
            raise ProxyError(
                Code.MESSAGE_PROPERTIES_TOO_LARGE,
                f"the total size of user property is too large, max is {limits.max_user_property_size}",
            )
        return props

    def _check_group(self, group: str) -> str:
        max_size = self.limits.max_message_group_size
        if not group.strip() or _has_control(group):
            raise ProxyError(
                Code.ILLEGAL_MESSAGE_GROUP, "message group cannot be blank or have control characters"
            )
        if len(group.encode()) >= max_size:
            raise ProxyError(Code.ILLEGAL_MESSAGE_GROUP, f"message group exceeds the max size {max_size}")
        return group

    def _delay(self, props: dict[str, str], deliver_ms: int) -> None:
        config = self.broker.config
        delay = deliver_ms - int(time.time() * 1000)
        most = min(self.limits.max_delay_ms, config.timer_max_delay_sec * 1000)
        if delay > most:
            raise ProxyError(Code.ILLEGAL_DELIVERY_TIME, f"the delivery time is more than {most} ms ahead")
        props[TIMER_DELIVER_MS] = str(deliver_ms)
        if delay > 0 and not config.timer_wheel_enable:  # no wheel: the delay level at or after it
            props[P.DELAY] = str(delay_level(self.broker.delay_levels_ms, delay))

    def _recall_handle(self, topic: str, props: dict[str, str]) -> str:
        """The handle that recalls this timer message (empty for any other message)."""
        deliver = props.get(TIMER_DELIVER_MS)
        if deliver is None or P.DELAY in props or int(deliver) <= int(time.time() * 1000):
            return ""
        config = self.broker.config
        return recall_handle(
            topic, config.broker_name, out_ms(int(deliver), config.timer_precision_ms), props[P.UNIQ_KEY]
        )

    async def recall(
        self, channel: LocalChannel, request: spb.RecallMessageRequest
    ) -> spb.RecallMessageResponse:
        """RecallMessage: the broker's RECALL_MESSAGE for a timer message not delivered yet."""
        topic = check_topic(request.topic)
        find_topic(self.broker, topic)
        try:
            decode_recall_handle(request.recall_handle)
        except ValueError as exc:
            raise ProxyError(Code.BAD_REQUEST, str(exc)) from None
        header = {"producerGroup": topic, "topic": topic, "recallHandle": request.recall_handle}
        answer = await channel.invoke(
            RemotingCommand.request(RECALL_MESSAGE, header), self.limits.request_timeout_s
        )
        if answer.code == ILLEGAL_OPERATION:
            raise ProxyError(Code.BAD_REQUEST, answer.remark or "recall failed")
        code = from_remoting(answer.code)
        if code != Code.OK:
            raise ProxyError(code, answer.remark or f"recall failed, code {answer.code}")
        return spb.RecallMessageResponse(
            status=status(Code.OK), message_id=answer.ext_fields.get("msgId", "")
        )

    async def _store(
        self, channel: LocalChannel, topic: str, queue_id: int, item: tuple[dict[str, str], int, int, bytes]
    ) -> spb.SendResultEntry:
        props, sys_flag, born_ms, body = item
        header = {  # SEND_MESSAGE_V2's short names (fact sheet 3.2)
            "a": topic,  # producerGroup: the 5.x producer has none, the topic stands for it
            "b": topic,
            "c": DEFAULT_TOPIC,
            "d": "4",
            "e": str(queue_id),
            "f": str(sys_flag),
            "g": str(born_ms),
            "h": "0",
            "i": encode_properties(props),
            "j": "0",
            "k": "false",
            "m": "false",
        }
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, body)
        answer = await channel.invoke(request, self.limits.request_timeout_s)
        code = from_remoting(answer.code)
        if code != Code.OK:
            return spb.SendResultEntry(
                status=status(code, answer.remark or f"send failed, code {answer.code}")
            )
        ext = answer.ext_fields
        offset = int(ext.get("queueOffset", "0"))
        return spb.SendResultEntry(
            status=status(Code.OK),
            message_id=props[P.UNIQ_KEY],
            transaction_id=transaction_id(ext.get("msgId", ""), offset)
            if sys_flag & TRANSACTION_PREPARED_TYPE
            else "",
            offset=offset,
            recall_handle=self._recall_handle(topic, props),
        )


def delay_level(levels_ms: Sequence[int], delay_ms: int) -> int:
    """The first delay level (1-based) that waits at least `delay_ms`, else the longest."""
    ordered = sorted(range(len(levels_ms)), key=lambda i: levels_ms[i])
    for index in ordered:
        if levels_ms[index] >= delay_ms:
            return index + 1
    return ordered[-1] + 1


def summarize(entries: list[spb.SendResultEntry]) -> spb.SendMessageResponse:
    """One status for all entries: theirs if they agree, MULTIPLE_RESULTS if not (RocketMQ's rule)."""
    codes = {entry.status.code for entry in entries}
    response = spb.SendMessageResponse(entries=entries)
    if len(codes) == 1:
        code = next(iter(codes))
        response.status.CopyFrom(status(code, entries[0].status.message))
    else:
        response.status.CopyFrom(status(Code.MULTIPLE_RESULTS))
    return response
