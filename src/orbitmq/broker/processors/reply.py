"""Request-reply (RocketMQ 4.6+): SEND_REPLY_MESSAGE (324) / SEND_REPLY_MESSAGE_V2 (325).

The broker pushes a responder's reply to the requesting client's connection, found by REPLY_TO_CLIENT
among its producers (the requester heartbeats as a producer), as RocketMQ's ReplyMessageProcessor does.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

from orbitmq.broker.processors.base import BadRequest, Fields, guarded
from orbitmq.broker.processors.send import SendProcessor
from orbitmq.broker.processors.send_request import V1_NAMES, V2_NAMES, SendHeader, send_header
from orbitmq.broker.processors.send_request import born_host as born_host_of
from orbitmq.message import properties as P
from orbitmq.message.property_string import decode_properties, encode_properties
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.store.store_message import StoreMessage
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer

log = logging.getLogger("orbitmq.broker")

PUSH_TIMEOUT_S = 3.0  # RocketMQ's Broker2Client.callClient waits 10 s; a requester answers at once


def register(server: RemotingServer, app: BrokerContext) -> None:
    sender = SendProcessor(app)

    async def process(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return await process_reply(app, sender, conn, request)

    for code in (RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
        server.register(code, guarded(process))


def find_producer_channel(app: BrokerContext, client_id: str) -> Connection | None:
    """ProducerManager.findChannel: the connection a client registered a producer group on."""
    for members in app.producers.groups.values():
        for channel, info in members.items():
            if info.client_id == client_id and isinstance(channel, Connection) and not channel.closed:
                return channel
    return None


async def process_reply(
    app: BrokerContext, sender: SendProcessor, conn: Connection, request: RemotingCommand
) -> RemotingCommand:
    """Push the reply (topic `<cluster>_REPLY_TOPIC`, properties MSG_TYPE=reply, CORRELATION_ID,
    REPLY_TO_CLIENT, TTL copied from the request) with PUSH_REPLY_MESSAGE_TO_CLIENT (326), adding
    PUSH_REPLY_TIME; with storeReplyMessageEnable (default true) also store it. SUCCESS only when the push
    succeeded ("msgId" 0 unless the store also took it); a reply whose requester is gone answers
    SYSTEM_ERROR "push reply message fail, channel of <id> not found.".
    """
    # SEND_REPLY_MESSAGE (324) carries the long field names, SEND_REPLY_MESSAGE_V2 the short ones
    names = V1_NAMES if request.code == RequestCode.SEND_REPLY_MESSAGE else V2_NAMES
    try:
        header = send_header(request.ext_fields, names)
    except BadRequest as exc:
        raise BadRequest(ResponseCode.SYSTEM_ERROR, f"bad reply message header: {exc.remark}") from None
    producer_group, topic, default_topic, default_queue_nums, queue_id, sys_flag = header[:6]
    born_timestamp, flag, properties_text, reconsume_times = header[6:10]
    if app.config.is_slave:
        raise BadRequest(ResponseCode.SERVICE_NOT_AVAILABLE, "the broker is a slave, sending is forbidden")
    tc = sender.check_topic(  # the send path's topic checks and auto-creation
        conn,
        topic=topic,
        default_topic=default_topic,
        default_queue_nums=default_queue_nums,
        sys_flag=sys_flag,
        queue_id=queue_id,
        producer_group=producer_group,
    )
    if queue_id < 0:
        queue_id = random.randrange(max(tc.write_queue_nums, 1))
    body = request.body_bytes()
    props = decode_properties(properties_text)

    unit_mode = Fields(request.ext_fields).opt_bool(names["unitMode"])
    pushed, remark = await _push(app, conn, request, header, props, unit_mode=unit_mode)
    config = app.config
    response = RemotingCommand.response(
        ResponseCode.SUCCESS if pushed else ResponseCode.SYSTEM_ERROR,
        None if pushed else remark,
        {
            "msgId": "0",
            "queueId": str(queue_id),
            "queueOffset": "0",
            P.MSG_REGION: config.region_id,
            P.TRACE_ON: "true" if config.trace_on else "false",
        },
    )
    if config.store_reply_message_enable:
        stored = dict(props)
        stored.pop(P.WAIT, None)
        stored[P.CLUSTER] = config.broker_cluster_name
        result = app.store.put_message(
            StoreMessage(
                topic=topic,
                queue_id=queue_id,
                flag=flag,
                body=body,
                properties=encode_properties(stored),
                sys_flag=sys_flag,
                born_timestamp=born_timestamp,
                born_host=born_host_of(conn),
                reconsume_times=reconsume_times,
            )
        )
        if result.ok:
            response.ext_fields["msgId"] = result.msg_id
            response.ext_fields["queueOffset"] = str(result.queue_offset)
        else:
            log.warning("storing a reply message failed: %s", result.status.name)
    return response


async def _push(
    app: BrokerContext,
    conn: Connection,
    request: RemotingCommand,
    header: SendHeader,
    props: dict[str, str],
    *,
    unit_mode: bool,
) -> tuple[bool, str]:
    producer_group, topic, default_topic, default_queue_nums, queue_id, sys_flag = header[:6]
    born_timestamp, flag, _, reconsume_times = header[6:10]
    reply_to = props.get(P.REPLY_TO_CLIENT)
    if not reply_to:
        log.warning("a reply message without %s cannot be pushed", P.REPLY_TO_CLIENT)
        return False, f"reply message properties[{P.REPLY_TO_CLIENT}] is null"
    channel = find_producer_channel(app, reply_to)
    if channel is None:
        remark = f"push reply message fail, channel of <{reply_to}> not found."
        log.warning(remark)
        return False, remark
    pushed_props = dict(props, **{P.PUSH_REPLY_TIME: str(app.clock.now_ms())})
    push_ext = {
        "bornHost": conn.remote_address,
        "storeHost": app.broker_addr,
        "storeTimestamp": str(app.clock.now_ms()),
        "producerGroup": producer_group,
        "topic": topic,
        "defaultTopic": default_topic,
        "defaultTopicQueueNums": str(default_queue_nums),
        "queueId": str(queue_id),
        "sysFlag": str(sys_flag),
        "bornTimestamp": str(born_timestamp),
        "flag": str(flag),
        "properties": encode_properties(pushed_props),
        "reconsumeTimes": str(reconsume_times),
        "unitMode": "true" if unit_mode else "false",
    }
    push = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push_ext, request.body_bytes())
    try:
        answer = await channel.invoke(push, PUSH_TIMEOUT_S)
    except Exception as exc:
        log.warning("push reply message to <%s> failed: %s", reply_to, exc)
        return False, f"push reply message to {reply_to} fail."
    if answer.code != ResponseCode.SUCCESS:
        log.warning("push reply message to <%s> answered %d: %s", reply_to, answer.code, answer.remark)
        return False, f"push reply message to {reply_to} fail."
    return True, ""
