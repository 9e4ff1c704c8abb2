"""The admin requests mqadmin 4.9.8's rarer verbs use, beyond the basics in admin.py: consume time spans,
offset cloning, producer lists, retention and cleaning on demand, raw consume queues, and the
consumer-status requests relayed to a client (what each answers: `register`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from orbitmq.broker.processors.base import BadRequest, Fields, guarded, success
from orbitmq.common.errors import ClientError
from orbitmq.message.ids import decode_offset_msg_id
from orbitmq.protocol.codes import LanguageCode, RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.java_values import parse_boolean
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer

log = logging.getLogger("orbitmq.broker")

RELAY_TIMEOUT_S = 5.0  # RocketMQ waits 5 s for GET_CONSUMER_RUNNING_INFO / CONSUME_MESSAGE_DIRECTLY
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


def _language(name: str) -> str:
    return name if name in LanguageCode.__members__ else "OTHER"


def register(server: RemotingServer, app: BrokerContext) -> None:
    """The handlers of the rarer admin codes:

    - QUERY_CONSUME_TIME_SPAN (303): per write queue of a topic, the store times of its first and last
      message and of the group's consume position, and how far behind the group is.
    - CLONE_GROUP_OFFSET (314, `mqadmin cloneGroupOffset`): copy a group's committed offsets of a topic to
      another group; unless `offline`, skipped when the source group is online without that subscription.
    - GET_ALL_PRODUCER_INFO (328, `mqadmin producer`): every producer group's connections.
    - DELETE_EXPIRED_COMMITLOG (329, `mqadmin deleteExpiredCommitLog`): run retention now, outside the
      delete hour (commit-log files older than fileReservedTime, then their consume-queue and index files).
    - CLEAN_UNUSED_TOPIC (316, `mqadmin cleanUnusedTopic`): drop the consume queues of topics the broker no
      longer has a config for.
    - QUERY_CONSUME_QUEUE (321, `mqadmin queryCq`): raw consume-queue entries of a queue (physical offset,
      size, tags code), its min/max index and, with a group, that group's subscription.
    - GET_CONSUMER_RUNNING_INFO (307, `mqadmin consumerStatus`) and CONSUME_MESSAGE_DIRECTLY (309,
      `mqadmin queryMsgByUniqueKey -g -d`): relayed to the consumer client named by `clientId` on the
      connection it heartbeats on, and its answer relayed back (as RocketMQ's Broker2Client does).
    """

    async def consume_time_span(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        topic, group = f.req_str("topic"), f.req_str("group")
        tc = app.topics.select(topic)
        if tc is None:
            raise BadRequest(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store, now = app.store, app.clock.now_ms()
        spans: list[dict[str, Any]] = []
        for queue_id in range(tc.write_queue_nums):
            min_time = store.get_earliest_message_time(topic, queue_id)
            max_offset = store.get_max_offset_in_queue(topic, queue_id)
            max_time = store.get_message_store_timestamp(topic, queue_id, max_offset - 1)
            consumer_offset = app.offsets.query_offset(group, topic, queue_id)
            if consumer_offset > 0:
                consume_time = store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
            else:
                consume_time = min_time
            delay = 0
            if consumer_offset < max_offset:
                delay = now - store.get_message_store_timestamp(topic, queue_id, consumer_offset)
            spans.append(
                {
                    "consumeTimeStamp": consume_time,
                    "delayTime": delay,
                    "maxTimeStamp": max_time,
                    "messageQueue": {
                        "brokerName": app.config.broker_name,
                        "queueId": queue_id,
                        "topic": topic,
                    },
                    "minTimeStamp": min_time,
                }
            )
        return success(body=orjson.dumps({"consumeTimeSpanSet": spans}))

    async def clone_group_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        src, dest = f.req_str("srcGroup"), f.req_str("destGroup")
        topic = (f.opt_str("topic") or "").strip()
        offline = parse_boolean(request.ext_fields.get("offline"))
        topics = {topic} if topic else app.offsets.topics_of_group(src)
        online = app.consumers.get(src)
        for t in sorted(topics):
            if app.topics.select(t) is None:
                log.warning("cloneGroupOffset: topic %s does not exist", t)
                continue
            if not offline and online is not None and online.subscriptions and t not in online.subscriptions:
                log.warning("cloneGroupOffset: the online group %s does not subscribe %s", src, t)
                continue
            for queue_id, offset in app.offsets.query_offsets(src, t).items():
                app.offsets.commit_offset(dest, t, queue_id, offset)
        return success()

    async def all_producer_info(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        data = {
            group: [
                {
                    "clientId": info.client_id,
                    "language": _language(info.language),
                    "lastUpdateTimestamp": info.last_update_ms,
                    "remoteIP": "/" + info.remote_address,  # Java's SocketAddress.toString()
                    "version": info.version,
                }
                for info in members.values()
            ]
            for group, members in sorted(app.producers.groups.items())
        }
        return success(body=orjson.dumps({"data": data}))

    async def delete_expired_commit_log(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        result = app.store.clean_expired_files(force=True)
        log.info("deleteExpiredCommitLog requested by %s: %s", conn.remote_address, result)
        return success()

    async def clean_unused_topic(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        unused = {t for t in app.store.topics() if app.topics.select(t) is None and t != SCHEDULE_TOPIC}
        if unused:
            log.info("cleanUnusedTopic: dropping the consume queues of %s", ", ".join(sorted(unused)))
            app.store.delete_topics(unused)
        return success()

    async def relay_to_consumer(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        group, client_id = f.req_str("consumerGroup"), f.req_str("clientId")
        info = app.consumers.get(group)
        channel = None
        if info is not None:
            channel = next((c.channel for c in info.channels.values() if c.client_id == client_id), None)
        if not isinstance(channel, Connection) or channel.closed:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"The Consumer <{client_id}> <{group}> not online")
        body = request.body_bytes()
        ext = dict(request.ext_fields)
        if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            # The broker attaches the message itself: the record at the offset msg id's offset.
            try:
                _, _, offset = decode_offset_msg_id(f.req_str("msgId"))
            except ClientError as exc:
                raise BadRequest(ResponseCode.SYSTEM_ERROR, f"bad msgId: {exc}") from None
            record = app.store.select_one_message_by_offset(offset)
            if record is None:
                raise BadRequest(ResponseCode.SYSTEM_ERROR, f"no message at offset {offset}")
            body = bytes(record)
            ext["brokerName"] = app.config.broker_name
        relayed = RemotingCommand.request(request.code, ext, body)
        try:
            answer = await channel.invoke(relayed, RELAY_TIMEOUT_S)
        except Exception as exc:
            raise BadRequest(
                ResponseCode.SYSTEM_ERROR, f"invoke the consumer <{client_id}> <{group}> failed: {exc}"
            ) from None
        return RemotingCommand.response(
            answer.code, answer.remark, dict(answer.ext_fields), answer.body_bytes()
        )

    async def query_consume_queue(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        topic, queue_id = f.req_str("topic"), f.req_int("queueId")
        index, count = f.req_long("index"), f.req_int("count")
        group = f.opt_str("consumerGroup")
        store = app.store
        store.dispatch_deferred()  # (its queues as the store's reads see them)
        if store.queues.find(topic, queue_id) is None:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"{queue_id}@{topic} is not exist!")
        body: dict[str, Any] = {
            "maxQueueIndex": store.get_max_offset_in_queue(topic, queue_id),
            "minQueueIndex": store.get_min_offset_in_queue(topic, queue_id),
        }
        if group is not None:
            sub = app.consumers.find_subscription(group, topic)
            if sub is None:
                body["filterData"] = f"{group}@{topic} is not online!"
            else:
                body["subscriptionData"] = sub.to_json_dict()
                body["filterData"] = "null" if sub.selector is None else sub.selector.expression
        entries = store.read_consume_queue(topic, queue_id, index, min(max(count, 0), 10000))
        if not entries or entries[0][0] != index:
            return success(remark=f"Index {index} of {queue_id}@{topic} is not exist!")
        body["queueData"] = [
            {"eval": False, "physicOffset": phy, "physicSize": size, "tagsCode": tags}
            for _, phy, size, tags in entries
        ]
        return success(body=orjson.dumps(dict(sorted(body.items()))))

    server.register(RequestCode.QUERY_CONSUME_QUEUE, guarded(query_consume_queue))
    server.register(RequestCode.QUERY_CONSUME_TIME_SPAN, guarded(consume_time_span))
    server.register(RequestCode.CLONE_GROUP_OFFSET, guarded(clone_group_offset))
    server.register(RequestCode.GET_ALL_PRODUCER_INFO, guarded(all_producer_info))
    server.register(RequestCode.DELETE_EXPIRED_COMMITLOG, guarded(delete_expired_commit_log))
    server.register(RequestCode.CLEAN_UNUSED_TOPIC, guarded(clean_unused_topic))
    server.register(RequestCode.GET_CONSUMER_RUNNING_INFO, guarded(relay_to_consumer))
    server.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, guarded(relay_to_consumer))
