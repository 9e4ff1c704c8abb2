"""Client management: HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, CHECK_CLIENT_CONFIG,
GET_CONSUMER_CONNECTION_LIST and GET_PRODUCER_CONNECTION_LIST.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from orbitmq.broker.client_registry import ClientChannelInfo, Subscription
from orbitmq.broker.config_files import load_json
from orbitmq.broker.processors.base import BadRequest, Fields, check_group, check_topic, guarded, success
from orbitmq.broker.sql_filter import check_filter_supported, compile_expression, is_tag_type
from orbitmq.broker.topics import retry_topic
from orbitmq.message.validation import topic_problem
from orbitmq.protocol.codes import LanguageCode, RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.perm import PERM_READ, PERM_WRITE
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer


log = logging.getLogger("orbitmq.broker")


def language_name(code: int) -> str:
    try:
        return LanguageCode(code).name
    except ValueError:
        return "OTHER"


def _subscriptions(raw: Any) -> list[Subscription]:
    subs: list[Subscription] = []
    for s in raw or []:
        if not isinstance(s, dict) or not isinstance(s.get("topic"), str):
            raise BadRequest(ResponseCode.SYSTEM_ERROR, "heartbeat subscription without topic")
        subs.append(
            Subscription(
                topic=check_topic(s["topic"]),
                sub_string=str(s.get("subString") or "*"),
                tags_set=[str(t) for t in s.get("tagsSet") or []],
                code_set=[int(c) for c in s.get("codeSet") or []],
                sub_version=int(s.get("subVersion") or 0),
                expression_type=str(s.get("expressionType") or "TAG"),
                class_filter_mode=bool(s.get("classFilterMode", False)),
            )
        )
    return subs


def register(server: RemotingServer, app: BrokerContext) -> None:
    """A heartbeat (HeartbeatData JSON, fact sheet 4.3) registers its producer groups and consumer groups
    (with subscriptions) under the connection it came on, auto-creates the consumer groups' subscription
    config and their `%RETRY%group` topic, and answers SUCCESS with the broker's version in the response's
    `version` field (clients store it as the broker version).
    """

    async def heart_beat(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            data = load_json(request.body_bytes())
        except ValueError as exc:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"heartbeat body is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequest(ResponseCode.SYSTEM_ERROR, "heartbeat body must be a JSON object")
        client_id = data.get("clientID")
        if not isinstance(client_id, str) or not client_id:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, "heartbeat without clientID")
        now = app.clock.now_ms()
        conn.state["client_id"] = client_id

        def info() -> ClientChannelInfo:
            return ClientChannelInfo(
                conn, client_id, language_name(request.language), request.version, conn.remote_address, now
            )

        try:
            consumers = list(data.get("consumerDataSet") or [])
            producers = list(data.get("producerDataSet") or [])
            parsed = []
            for cd in consumers:
                group = cd.get("groupName") if isinstance(cd, dict) else None
                if not isinstance(group, str) or not group:
                    raise BadRequest(ResponseCode.SYSTEM_ERROR, "heartbeat consumer data without groupName")
                parsed.append((check_group(group), cd, _subscriptions(cd.get("subscriptionDataSet"))))
            for pd in producers:
                if not isinstance(pd, dict) or not isinstance(pd.get("groupName"), str):
                    raise BadRequest(ResponseCode.SYSTEM_ERROR, "heartbeat producer data without groupName")
                check_group(pd["groupName"])
        except (TypeError, ValueError, AttributeError) as exc:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"malformed heartbeat: {exc}") from None
        for group, cd, subs in parsed:
            group_cfg = app.subscription_groups.find(group)
            notify = app.notify_enabled(group)
            # A group longer than 120 characters is legal but its %RETRY% topic is not (127 at most).
            if group_cfg is not None and topic_problem(retry_topic(group)) is None:
                app.topics.create_in_send_back(
                    retry_topic(group), max(group_cfg.retry_queue_nums, 1), PERM_READ | PERM_WRITE
                )
            app.consumers.register(
                group,
                info(),
                consume_type=str(cd.get("consumeType") or "CONSUME_PASSIVELY"),
                message_model=str(cd.get("messageModel") or "CLUSTERING"),
                consume_from_where=str(cd.get("consumeFromWhere") or "CONSUME_FROM_LAST_OFFSET"),
                subscriptions=subs,
                notify=notify,
            )
        for pd in producers:
            app.producers.register(pd["groupName"], info())
        return success()

    async def unregister_client(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        f.req_str("clientID")
        producer_group = f.opt_str("producerGroup")
        consumer_group = f.opt_str("consumerGroup")
        if producer_group:
            app.producers.unregister(producer_group, conn)
        if consumer_group:
            app.consumers.unregister(consumer_group, conn, notify=app.notify_enabled(consumer_group))
        return success()

    async def consumer_list(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        group = Fields(request.ext_fields).req_str("consumerGroup")
        info = app.consumers.get(group)
        ids = info.client_ids() if info is not None else []
        if not ids:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")
        return success(body=orjson.dumps({"consumerIdList": ids}))

    async def check_client_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """A consumer starting with a SQL92 subscription asks whether this broker can filter by it
        (ClientManageProcessor.checkClientConfig): refused when property filtering is off, or with
        the parser's reason when the expression does not compile."""
        if not request.body_length:
            return success()
        try:
            data = load_json(request.body_bytes())
        except ValueError as exc:
            raise BadRequest(
                ResponseCode.SYSTEM_ERROR, f"CheckClientRequestBody is not JSON: {exc}"
            ) from None
        sub = data.get("subscriptionData") if isinstance(data, dict) else None
        if not isinstance(sub, dict):
            return success()
        expression_type = sub.get("expressionType")
        expression_type = expression_type if isinstance(expression_type, str) else None
        if is_tag_type(expression_type):
            return success()
        assert expression_type is not None
        try:
            check_filter_supported(app.config, expression_type)
            sub_string = sub.get("subString")
            compile_expression(app.config, expression_type, sub_string if isinstance(sub_string, str) else "")
        except BadRequest as bad:
            log.warning(
                "client %s of group %s refused at CHECK_CLIENT_CONFIG: %s",
                data.get("clientId"),
                data.get("group"),
                bad.remark,
            )
            raise
        return success()

    async def consumer_connections(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        group = Fields(request.ext_fields).req_str("consumerGroup")
        info = app.consumers.get(group)
        if info is None or not info.channels:
            raise BadRequest(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        body = {
            "connectionSet": [_connection(c) for c in info.channels.values()],
            "consumeFromWhere": info.consume_from_where,
            "consumeType": info.consume_type,
            "messageModel": info.message_model,
            "subscriptionTable": {t: s.to_json_dict() for t, s in info.subscriptions.items()},
        }
        return success(body=orjson.dumps(body))

    async def producer_connections(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        group = Fields(request.ext_fields).req_str("producerGroup")
        members = app.producers.groups.get(group)
        if not members:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        return success(body=orjson.dumps({"connectionSet": [_connection(c) for c in members.values()]}))

    server.register(RequestCode.HEART_BEAT, guarded(heart_beat))
    server.register(RequestCode.UNREGISTER_CLIENT, guarded(unregister_client))
    server.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, guarded(consumer_list))
    server.register(RequestCode.CHECK_CLIENT_CONFIG, guarded(check_client_config))
    server.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, guarded(consumer_connections))
    server.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, guarded(producer_connections))


def _connection(c: ClientChannelInfo) -> dict[str, Any]:
    return {
        "clientAddr": c.remote_address,
        "clientId": c.client_id,
        "language": c.language,
        "version": c.version,
    }
