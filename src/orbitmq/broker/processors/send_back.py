"""CONSUMER_SEND_MSG_BACK: a consumer gives a message back (RocketMQ's consumerSendMsgBack).

The message is read back from the commit log by its offset and stored again: in %RETRY%group with a delay
level (the schedule service brings it back later), or in %DLQ%group once its retries are spent or the
consumer asked for it (delay level < 0). The store append and its answer are the send processor's.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol, cast

from orbitmq.broker.processors.base import BadRequest, Fields, success
from orbitmq.broker.topics import dlq_topic, retry_topic
from orbitmq.message import properties as P
from orbitmq.message.record_decode import decode_record
from orbitmq.message.validation import TOPIC_MAX_LENGTH
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.perm import PERM_READ, PERM_WRITE, is_writeable
from orbitmq.store.results import PutMessageResult
from orbitmq.store.store_message import stored_again

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.dispatch import Later

V3_4_9 = 121


class Sender(Protocol):
    """What a send-back needs of the send processor (send.py's SendProcessor): the store append's
    delay-level redirect and its answer, so both paths answer alike."""

    @property
    def app(self) -> BrokerContext: ...

    def redirect_delayed(
        self, topic: str, queue_id: int, sys_flag: int, props: dict[str, str]
    ) -> tuple[str, int]: ...

    def respond(
        self, result: PutMessageResult, wait: bool, queue_id: int, topic: str
    ) -> RemotingCommand | Later | Awaitable[RemotingCommand]: ...


async def send_back(sender: Sender, request: RemotingCommand) -> RemotingCommand:
    """A consumer gives a message back: to %RETRY%group with a delay level, or to %DLQ%group."""
    app = sender.app
    f = Fields(request.ext_fields)
    offset = f.req_long("offset")
    group = f.req_str("group")
    delay_level = f.req_int("delayLevel")
    header_max = f.opt_int("maxReconsumeTimes", -1) if "maxReconsumeTimes" in request.ext_fields else None
    if app.config.is_slave:
        raise BadRequest(ResponseCode.SERVICE_NOT_AVAILABLE, "the broker is a slave")
    group_cfg = app.subscription_groups.find(group)
    if group_cfg is None:
        raise BadRequest(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}")
    if not is_writeable(app.config.broker_permission):
        raise BadRequest(
            ResponseCode.NO_PERMISSION,
            f"the broker[{app.config.broker_ip1}] sending message is forbidden",
        )
    if group_cfg.retry_queue_nums <= 0:
        return success()
    new_topic = retry_topic(group)
    _check_send_back_topic(new_topic, group)
    topics_before = len(app.topics.table)
    queue_id = random.randrange(group_cfg.retry_queue_nums)
    tc = app.topics.create_in_send_back(new_topic, group_cfg.retry_queue_nums, PERM_READ | PERM_WRITE)
    if not is_writeable(tc.perm):
        raise BadRequest(ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden")
    raw = app.store.select_one_message_by_offset(offset)
    if raw is None:
        raise BadRequest(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {offset}")
    msg = decode_record(raw, decompress=False)
    props = dict(msg.properties)
    props.setdefault(P.RETRY_TOPIC, msg.topic)
    props.pop(P.WAIT, None)
    max_times = group_cfg.retry_max_times
    if request.version >= V3_4_9 and header_max is not None:
        max_times = header_max
    if msg.reconsume_times >= max_times or delay_level < 0:
        new_topic = dlq_topic(group)
        _check_send_back_topic(new_topic, group)
        queue_id = 0
        tc = app.topics.create_in_send_back(new_topic, 1, PERM_READ | PERM_WRITE)
        props.pop(P.DELAY, None)
    else:
        if delay_level == 0:
            delay_level = 3 + msg.reconsume_times
        props[P.DELAY] = str(delay_level)
    props.setdefault(P.ORIGIN_MESSAGE_ID, msg.offset_msg_id)
    props[P.CLUSTER] = app.config.broker_cluster_name
    topic, queue_id = sender.redirect_delayed(new_topic, queue_id, msg.sys_flag, props)
    store_msg = stored_again(msg, topic, queue_id, props, msg.reconsume_times + 1)
    result = app.store.put_message(store_msg)
    if len(app.topics.table) != topics_before:
        await app.config_durable()  # a retry/DLQ topic created above is on disk before the answer
    answer = sender.respond(result, True, queue_id, topic)  # without `later`: never a Later
    response = (
        answer if isinstance(answer, RemotingCommand) else await cast(Awaitable[RemotingCommand], answer)
    )
    return RemotingCommand.response(response.code, response.remark)


def _check_send_back_topic(topic: str, group: str) -> None:
    """A legal group (255 chars at most) can make an illegal %RETRY%/%DLQ% topic (127 at most): refuse the
    send-back instead of creating a topic whose messages the store or the schedule service would refuse
    later (RocketMQ ends in the same place: its DLQ put fails, its retry never leaves the schedule topic)."""
    if len(topic) > TOPIC_MAX_LENGTH:
        raise BadRequest(
            ResponseCode.SYSTEM_ERROR,
            f"send back refused: the topic {topic[:40]}... of group {group[:32]}... ({len(group)} chars) "
            f"is {len(topic)} chars, longer than the topic max length {TOPIC_MAX_LENGTH}",
        )
