"""Request-reply (RocketMQ 4.6+): the requester's future table and the responder's reply helper.

A request is an ordinary message with CORRELATION_ID (a fresh UUID), REPLY_TO_CLIENT (the requester's
client id) and TTL (the timeout in ms). The responder answers with `create_reply_message(request, body)`
(topic `<cluster>_REPLY_TOPIC`, MSG_TYPE=reply, the three properties copied back) and sends it with
any producer; the producer sends it as SEND_REPLY_MESSAGE_V2 and the broker pushes it to the requester's
connection (PUSH_REPLY_MESSAGE_TO_CLIENT), where `ReplyTable.on_push` completes the waiting future.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from orbitmq.common.errors import ClientError
from orbitmq.message import properties as P
from orbitmq.message.compression import decompress_body
from orbitmq.message.model import Message, MessageExt
from orbitmq.message.property_string import decode_properties
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.java_values import JavaNumberFormatError, parse_int, parse_long
from orbitmq.transport.connection import Connection

log = logging.getLogger("orbitmq.client")

REPLY_MESSAGE_FLAG = "reply"  # MixAll.REPLY_MESSAGE_FLAG
REPLY_TOPIC_SUFFIX = "_REPLY_TOPIC"


def reply_topic(cluster: str) -> str:
    return cluster + REPLY_TOPIC_SUFFIX


def create_reply_message(request: Message, body: bytes | str) -> Message:
    """RocketMQ's MessageUtil.createReplyMessage: the reply to a received request message."""
    cluster = request.properties.get(P.CLUSTER)
    if not cluster:
        raise ClientError(
            f"cannot create a reply: the request message has no {P.CLUSTER} property "
            "(was it received from a broker?)"
        )
    reply = Message(reply_topic(cluster), body.encode() if isinstance(body, str) else bytes(body))
    reply.properties[P.MSG_TYPE] = REPLY_MESSAGE_FLAG
    for name in (P.CORRELATION_ID, P.REPLY_TO_CLIENT, P.TTL):
        value = request.properties.get(name)
        if value is not None:
            reply.properties[name] = value
    return reply


def prepare_request(msg: Message, client_id: str, timeout: float) -> str:
    """Mark `msg` as a request (DefaultMQProducerImpl.prepareSendRequest); returns its correlation id."""
    correlation_id = str(uuid.uuid4())
    msg.properties[P.CORRELATION_ID] = correlation_id
    msg.properties[P.REPLY_TO_CLIENT] = client_id
    msg.properties[P.TTL] = str(int(timeout * 1000))
    return correlation_id


def _int(ext: dict[str, str], name: str, *, long: bool = False) -> int:
    value = ext.get(name)
    if not value:
        return 0
    try:
        return parse_long(value) if long else parse_int(value)
    except JavaNumberFormatError:
        return 0


def reply_from_push(request: RemotingCommand) -> MessageExt:
    """The reply message of a PUSH_REPLY_MESSAGE_TO_CLIENT request (ReplyMessageRequestHeader + body)."""
    ext = request.ext_fields
    sys_flag = _int(ext, "sysFlag")
    body = decompress_body(request.body_bytes(), sys_flag)
    return MessageExt(
        topic=ext.get("topic", ""),
        body=body,
        flag=_int(ext, "flag"),
        properties=decode_properties(ext.get("properties") or ""),
        queue_id=_int(ext, "queueId"),
        sys_flag=sys_flag,
        born_timestamp=_int(ext, "bornTimestamp", long=True),
        born_host=ext.get("bornHost", ""),
        store_timestamp=_int(ext, "storeTimestamp", long=True),
        store_host=ext.get("storeHost", ""),
        reconsume_times=_int(ext, "reconsumeTimes"),
    )


class ReplyTable:
    """Correlation id -> the requester's future (RequestFutureHolder)."""

    def __init__(self) -> None:
        self.futures: dict[str, asyncio.Future[MessageExt]] = {}

    def expect(self, correlation_id: str) -> asyncio.Future[MessageExt]:
        future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self.futures[correlation_id] = future
        return future

    def discard(self, correlation_id: str) -> None:
        self.futures.pop(correlation_id, None)

    async def on_push(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        try:
            reply = reply_from_push(request)
        except Exception as exc:  # a body we cannot decompress: say so to the broker
            answer = RemotingCommand.response(ResponseCode.SYSTEM_ERROR, f"bad reply message: {exc}")
            return None if request.is_oneway else answer.response_to(request)
        reply.properties[P.ARRIVE_TIME] = str(int(time.time() * 1000))
        correlation_id = reply.properties.get(P.CORRELATION_ID, "")
        future = self.futures.pop(correlation_id, None)
        if future is None:
            log.warning("a reply arrived for no waiting request (correlation id %r, late?)", correlation_id)
        elif not future.done():
            future.set_result(reply)
        if request.is_oneway:
            return None
        return RemotingCommand.response(ResponseCode.SUCCESS).response_to(request)
