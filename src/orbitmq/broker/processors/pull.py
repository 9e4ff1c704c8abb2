"""PULL_MESSAGE: pre-checks, TAG filtering, long polling, offset commit piggyback, zero-copy bodies.

Order of checks and the store-status -> response-code mapping follow fact sheet 3.4. FOUND responses
carry the store's memoryviews as `body_parts`: the records are never copied here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import orjson

from orbitmq.broker.client_registry import Subscription, parse_subscription
from orbitmq.broker.long_polling import HeldPull
from orbitmq.broker.processors.base import BadRequest, Fields, guarded
from orbitmq.broker.sql_filter import apply_selector, check_filter_supported, selector_for
from orbitmq.broker.topics import OFFSET_MOVED_EVENT
from orbitmq.message import properties as P
from orbitmq.message.hashing import java_string_hash
from orbitmq.message.hosts import pack_address
from orbitmq.message.property_string import encode_properties
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.perm import is_readable
from orbitmq.store.store_message import StoreMessage
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer

FLAG_COMMIT_OFFSET: Final = 0x1
FLAG_SUSPEND: Final = 0x2
FLAG_SUBSCRIPTION: Final = 0x4

log: Final = logging.getLogger("orbitmq.broker")


def register(server: RemotingServer, app: BrokerContext) -> None:
    async def process(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        return process_pull(app, conn, request, allow_suspend=True)

    server.register(RequestCode.PULL_MESSAGE, guarded(process), limit=100000)


async def answer_held_pull(app: BrokerContext, held: HeldPull) -> None:
    conn: Connection = held.conn
    request: RemotingCommand = held.request
    if conn.closed:
        return
    try:
        response = process_pull(app, conn, request, allow_suspend=False)
    except BadRequest as bad:
        response = _pull_response(bad.code, bad.remark, next_offset=0, min_offset=0, max_offset=0)
    except Exception as exc:
        response = _pull_response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}", 0, 0, 0)
    if response is not None and not conn.closed:
        await conn.drain()
        conn.send(response.response_to(request))


def _pull_response(
    code: int, remark: str | None, next_offset: int, min_offset: int, max_offset: int, *, suggest: int = 0
) -> RemotingCommand:
    return RemotingCommand.response(
        code,
        remark,
        {
            "suggestWhichBrokerId": str(suggest),
            "nextBeginOffset": str(next_offset),
            "minOffset": str(min_offset),
            "maxOffset": str(max_offset),
        },
    )


def process_pull(
    app: BrokerContext, conn: Connection, request: RemotingCommand, *, allow_suspend: bool
) -> RemotingCommand | None:
    """The answer to one pull, or None when it is held for long polling.

    A pull that finds nothing (PULL_NOT_FOUND) with FLAG_SUSPEND is held by the PullRequestHoldService and
    answered later by `answer_held_pull` (re-processed once, without suspend permission and without
    committing again). Every response carries suggestWhichBrokerId, nextBeginOffset, minOffset and
    maxOffset. A master answering PULL_OFFSET_MOVED also stores an OffsetMovedEvent in topic
    OFFSET_MOVED_EVENT, tagged and keyed by the group, so tools see which consumers lost messages.
    """
    f = Fields(request.ext_fields)
    group = f.req_str("consumerGroup")
    topic = f.req_str("topic")
    queue_id = f.req_int("queueId")
    queue_offset = f.req_long("queueOffset")
    max_msg_nums = f.req_int("maxMsgNums")
    sys_flag = f.req_int("sysFlag")
    commit_offset = f.req_long("commitOffset")
    suspend_timeout = f.req_long("suspendTimeoutMillis")
    sub_version = f.req_long("subVersion")
    expression = f.opt_str("subscription")
    expression_type = f.opt_str("expressionType") or "TAG"

    def fail(code: int, remark: str) -> BadRequest:
        return BadRequest(code, remark)

    config = app.config
    try:
        if not is_readable(config.broker_permission):
            raise fail(
                ResponseCode.NO_PERMISSION, f"the broker[{config.broker_ip1}] pulling message is forbidden"
            )
        group_cfg = app.subscription_groups.find(group)
        if group_cfg is None:
            raise fail(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist"
            )
        if not group_cfg.consume_enable:
            raise fail(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        tc = app.topics.select(topic)
        if tc is None:
            raise fail(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if not is_readable(tc.perm):
            raise fail(ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        if queue_id < 0 or queue_id >= tc.read_queue_nums:
            raise fail(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{tc.read_queue_nums}] consumer:[{conn.remote_address}]",
            )
        if max_msg_nums <= 0:
            raise fail(ResponseCode.SYSTEM_ERROR, f"maxMsgNums[{max_msg_nums}] is illegal")
        subscription = _subscription(
            app,
            group,
            topic=topic,
            sys_flag=sys_flag,
            expression=expression,
            expression_type=expression_type,
            sub_version=sub_version,
            broadcast_allowed=group_cfg.consume_broadcast_enable,
        )
        selector = selector_for(config, subscription)  # SQL92 only; raises on a bad expression
    except BadRequest as bad:
        return _pull_response(bad.code, bad.remark, queue_offset, 0, 0)

    message_filter: Callable[[int], bool] | None = None
    if subscription is not None and subscription.code_set and subscription.sub_string != "*":
        message_filter = subscription.matches_tags_code
    store = app.store
    if selector is None:
        # Coalesced: adjacent records of the mapped log go out as one part each (scatter-gather reply).
        result = store.get_messages(
            group, topic, queue_id, queue_offset, max_msg_nums, message_filter, coalesce=True
        )
    else:
        # SQL92 needs each record's properties: one buffer per message, filtered here.
        result = apply_selector(
            store.get_messages(group, topic, queue_id, queue_offset, max_msg_nums, message_filter), selector
        )
    status = result.status.name
    next_offset = result.next_begin_offset
    if status == "FOUND":
        code = ResponseCode.SUCCESS
    elif status in ("MESSAGE_WAS_REMOVING", "NO_MATCHED_MESSAGE"):
        code = ResponseCode.PULL_RETRY_IMMEDIATELY
    elif status in ("NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"):
        code = ResponseCode.PULL_OFFSET_MOVED if queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
    elif status in ("OFFSET_FOUND_NULL", "OFFSET_OVERFLOW_ONE"):
        code = ResponseCode.PULL_NOT_FOUND
    elif status in ("OFFSET_OVERFLOW_BADLY", "OFFSET_TOO_SMALL"):
        code = ResponseCode.PULL_OFFSET_MOVED
    else:
        code = ResponseCode.SYSTEM_ERROR

    suggest = 0
    if config.slave_read_enable:
        suggest = (
            group_cfg.which_broker_when_consume_slowly
            if result.suggest_pull_from_slave
            else group_cfg.broker_id
        )
    if config.is_slave and code == ResponseCode.PULL_OFFSET_MOVED:
        # A slave does not correct offsets (offsetCheckInSlave=false): try again, at the master.
        code = ResponseCode.PULL_RETRY_IMMEDIATELY
        next_offset = queue_offset
        suggest = group_cfg.broker_id
    elif code == ResponseCode.PULL_OFFSET_MOVED:
        _store_offset_moved_event(
            app, group, topic, queue_id, offset_request=queue_offset, offset_new=next_offset
        )

    if allow_suspend and sys_flag & FLAG_COMMIT_OFFSET and not config.is_slave and commit_offset >= 0:
        app.offsets.commit_offset(group, topic, queue_id, commit_offset)

    if (
        code == ResponseCode.PULL_NOT_FOUND
        and allow_suspend
        and sys_flag & FLAG_SUSPEND
        and app.hold is not None
    ):
        timeout_ms = suspend_timeout if config.long_polling_enable else config.short_polling_time_mills
        # A held pull is in flight: the dispatcher answers SYSTEM_BUSY past serverMaxInflightPerConnection.
        conn.inflight += 1
        app.hold.hold(
            HeldPull(
                conn=conn,
                request=request,
                topic=topic,
                queue_id=queue_id,
                pull_from_offset=queue_offset,
                deadline=app.clock.monotonic() + max(timeout_ms, 0) / 1000,
                subscription=subscription,
            )
        )
        return None

    response = _pull_response(
        code, status, next_offset, result.min_offset, result.max_offset, suggest=suggest
    )
    if code == ResponseCode.SUCCESS:
        response.body_parts = list(result.buffers)
        app.stats.get(group, topic, result.message_count, result.buffer_total_size)
    return response


def offset_moved_event_body(
    group: str, topic: str, broker_name: str, queue_id: int, *, offset_request: int, offset_new: int
) -> bytes:
    """OffsetMovedEvent as RocketMQ's fastjson writes it (keys sorted, messageQueue nested)."""
    return orjson.dumps(
        {
            "consumerGroup": group,
            "messageQueue": {"brokerName": broker_name, "queueId": queue_id, "topic": topic},
            "offsetNew": offset_new,
            "offsetRequest": offset_request,
        }
    )


def _store_offset_moved_event(
    app: BrokerContext, group: str, topic: str, queue_id: int, *, offset_request: int, offset_new: int
) -> None:
    body = offset_moved_event_body(
        group,
        topic,
        app.config.broker_name,
        queue_id,
        offset_request=offset_request,
        offset_new=offset_new,
    )
    try:
        result = app.store.put_message(
            StoreMessage(
                topic=OFFSET_MOVED_EVENT,
                queue_id=0,
                flag=0,
                body=body,
                properties=encode_properties({P.TAGS: group, P.KEYS: group}),
                sys_flag=0,
                born_timestamp=app.clock.now_ms(),
                born_host=pack_address(app.broker_addr),
            )
        )
    except Exception:  # the pull is answered regardless: the event is informational
        log.exception("storing the offset moved event failed")
        return
    if not result.ok:
        log.warning("storing the offset moved event failed: %s", result.status.name)
    log.warning(
        "PULL_OFFSET_MOVED: group=%s topic=%s queue=%d requested=%d new=%d",
        group,
        topic,
        queue_id,
        offset_request,
        offset_new,
    )


def _subscription(
    app: BrokerContext,
    group: str,
    *,
    topic: str,
    sys_flag: int,
    expression: str | None,
    expression_type: str,
    sub_version: int,
    broadcast_allowed: bool,
) -> Subscription | None:
    check_filter_supported(app.config, expression_type)
    if sys_flag & FLAG_SUBSCRIPTION:
        try:
            return parse_subscription(topic, expression, expression_type, sub_version, java_string_hash)
        except Exception as exc:
            raise BadRequest(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"parse the consumer's subscription failed: {exc}"
            ) from None
    info = app.consumers.get(group)
    if info is None:
        raise BadRequest(
            ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist, group: {group}"
        )
    if not broadcast_allowed and info.message_model == "BROADCASTING":
        raise BadRequest(
            ResponseCode.NO_PERMISSION, f"the consumer group[{group}] can not consume by broadcast way"
        )
    sub = info.subscriptions.get(topic)
    if sub is None:
        raise BadRequest(
            ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist, group: {group}"
        )
    if sub.sub_version < sub_version:
        raise BadRequest(
            ResponseCode.SUBSCRIPTION_NOT_LATEST,
            f"the consumer's subscription not latest, group: {group} {sub.sub_version} < {sub_version}",
        )
    return sub
