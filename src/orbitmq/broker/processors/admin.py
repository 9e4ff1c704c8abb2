"""Admin requests: topics, subscription groups, offsets tables, stats, broker config and runtime info.

Bodies with MessageQueue-keyed maps (TopicStatsTable, ConsumeStats, ResetOffsetBody) are written as
fastjson writes them, with the queue object itself as the key (`{{"brokerName":..}:{..}}`, fact sheet
4.7/4.12): that is what Java admin tools parse; orbitmq's readers use java_json for it.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

import orjson

from orbitmq.broker.config import format_properties_text, parse_properties_text
from orbitmq.broker.config_files import load_json
from orbitmq.broker.consume_stats import ConsumeStatsBuilder, mq_key, object_key_map
from orbitmq.broker.processors.base import BadRequest, Fields, check_group, guarded, success
from orbitmq.broker.topics import TopicConfig, validate_topic_name
from orbitmq.protocol.bodies import SubscriptionGroupConfig
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection

log = logging.getLogger("orbitmq.broker.admin")

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer


def register(server: RemotingServer, app: BrokerContext) -> None:
    broker_name = app.config.broker_name
    config_version = {"counter": 0, "timestamp": app.clock.now_ms()}

    def write_queue_ids(topic: str, code: int, remark: str) -> range:
        """The ids of the topic's write queues; BadRequest(code, remark) for a topic this broker lacks."""
        tc = app.topics.select(topic)
        if tc is None:
            raise BadRequest(code, remark)
        return range(tc.write_queue_nums)

    async def update_topic(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        topic = f.req_str("topic")
        reason = validate_topic_name(topic)
        if reason is not None:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, reason)
        if topic == app.config.broker_cluster_name or app.topics.is_system_topic(topic):
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        filter_type = f.opt_str("topicFilterType") or "SINGLE_TAG"
        if filter_type not in ("SINGLE_TAG", "MULTI_TAG"):
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"bad topicFilterType {filter_type[:32]!r}")
        read_nums, write_nums = f.req_int("readQueueNums"), f.req_int("writeQueueNums")
        if not (0 < read_nums <= 1024 and 0 < write_nums <= 1024):
            raise BadRequest(ResponseCode.SYSTEM_ERROR, "readQueueNums and writeQueueNums must be in 1..1024")
        tc = TopicConfig(
            topic,
            read_queue_nums=read_nums,
            write_queue_nums=write_nums,
            perm=f.req_int("perm") & 0xF,
            topic_filter_type=filter_type,
            topic_sys_flag=f.opt_int("topicSysFlag", 0),
            order=f.opt_bool("order", False),
        )
        app.topics.update(tc)
        await app.config_durable()
        await app.registration.register_topics([tc])
        return success()

    async def all_topic_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return success(body=orjson.dumps(app.topics.wrapper_dict()))

    async def delete_topic(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        topic = Fields(request.ext_fields).req_str("topic")  # its name is checked by name_guard
        if app.topics.is_system_topic(topic):  # as 4.9.8's deleteTopic
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        app.topics.delete(topic)
        app.offsets.remove_topics([topic])
        with contextlib.suppress(AttributeError):
            app.store.delete_topics({topic})
        await app.config_durable()
        return success()

    async def topic_stats(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        topic = Fields(request.ext_fields).req_str("topic")
        queue_ids = write_queue_ids(topic, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = app.store
        entries = []
        for q in queue_ids:
            max_offset = store.get_max_offset_in_queue(topic, q)
            last = store.get_message_store_timestamp(topic, q, max_offset - 1) if max_offset > 0 else 0
            entries.append(
                (
                    mq_key(topic, broker_name, q),
                    {
                        "lastUpdateTimestamp": last,
                        "maxOffset": max_offset,
                        "minOffset": store.get_min_offset_in_queue(topic, q),
                    },
                )
            )
        return success(body=b'{"offsetTable":' + object_key_map(entries) + b"}")

    async def consume_stats(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        group = f.req_str("consumerGroup")
        topic = (f.opt_str("topic") or "").strip()
        builder = ConsumeStatsBuilder(
            app.topics, app.offsets, app.store, app.stats, app.consumers, app.config.broker_name
        )
        topics = [topic] if topic else builder.group_topics(group)
        return success(body=builder.build(group, topics, tps_topic=topic or None).body)

    async def runtime_info(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        table: dict[str, str] = {}
        with contextlib.suppress(Exception):
            table.update(app.store.runtime_info())
        table.update(app.stats.runtime_info())
        table.update(
            {
                "brokerVersionDesc": "V4_9_7",
                "brokerVersion": "407",
                "bootTimestamp": str(app.started_ms),
                "startAcceptSendRequestTimeStamp": "0",
                "brokerName": app.config.broker_name,
                "brokerRole": app.config.broker_role,
                "heldPullRequests": str(app.hold.held_count if app.hold else 0),
                "scheduleMessageDelivered": str(app.schedule.delivered),
                "scheduleMessageSkipped": str(app.schedule.skipped),
            }
        )
        return success(body=orjson.dumps({"table": table}))

    async def update_group(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            cfg = SubscriptionGroupConfig.from_any(load_json(request.body_bytes()))
        except (ValueError, TypeError, AttributeError) as exc:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"bad SubscriptionGroupConfig body: {exc}") from None
        check_group(cfg.group_name)
        app.subscription_groups.update(cfg)
        await app.config_durable()
        return success()

    async def all_groups(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return success(body=orjson.dumps(app.subscription_groups.to_json_dict()))

    async def delete_group(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        group = f.req_str("groupName")
        app.subscription_groups.delete(group)
        await app.config_durable()
        if f.opt_bool("removeOffset", False):
            app.offsets.remove_group(group)
        return success()

    async def all_consumer_offsets(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return success(body=orjson.dumps(app.offsets.to_json_dict()))

    async def all_delay_offsets(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        return success(body=orjson.dumps(app.schedule.to_json_dict()))

    async def get_broker_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        body = format_properties_text(sorted(app.config.properties(mask_secrets=True).items())).encode()
        return success({"version": orjson.dumps(config_version).decode()}, body)

    async def update_broker_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        try:
            props = parse_properties_text(request.body_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, "the config body is not UTF-8") from None
        refused = app.config.black_listed(props)
        if refused:
            # 4.9.8 answers NO_PERMISSION "Can not update config in black list."; we also name the keys
            raise BadRequest(
                ResponseCode.NO_PERMISSION, f"Can not update config in black list: {', '.join(refused)}"
            )
        try:
            changed = app.config.update(props)
        except ValueError as exc:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"config not updated: {exc}") from None
        config_version["counter"] += 1
        config_version["timestamp"] = app.clock.now_ms()
        try:
            if not app.config.write_back(props):
                log.info("broker config updated in memory only (started without -c): %s", sorted(props))
        except OSError as exc:  # applied all the same, as RocketMQ does when persisting fails
            log.warning("broker config updated but not written to %s: %s", app.config.broker_config_path, exc)
        if "brokerPermission" in changed:
            await app.registration.register_all()
        return success()

    async def reset_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        topic, group = f.req_str("topic"), f.req_str("group")
        timestamp = f.req_long("timestamp")
        force = f.opt_bool("isForce", True)
        remark = f"[reset-offset] topic does not exist, {topic}"
        queue_ids = write_queue_ids(topic, ResponseCode.SYSTEM_ERROR, remark)
        store = app.store
        entries = []
        for q in queue_ids:
            current = app.offsets.query_offset(group, topic, q)
            if timestamp == -1:
                target = store.get_max_offset_in_queue(topic, q)
            else:
                target = store.get_offset_in_queue_by_time(topic, q, timestamp)
            if current >= 0 and not force and target >= current:
                target = current
            app.offsets.commit_offset(group, topic, q, target)
            entries.append((mq_key(topic, broker_name, q), target))
        body = b'{"offsetTable":' + object_key_map(entries) + b"}"
        info = app.consumers.get(group)
        if info is not None:
            header = {
                "topic": topic,
                "group": group,
                "timestamp": str(timestamp),
                "isForce": str(force).lower(),
            }
            for member in info.channels.values():
                target_conn = member.channel
                if isinstance(target_conn, Connection) and not target_conn.closed:
                    notify = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header, body)
                    app.spawn_side_task(_quiet(target_conn.invoke(notify, 5.0)))
        return success(body=body)

    async def consume_by_who(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        topic = Fields(request.ext_fields).req_str("topic")
        groups = app.consumers.groups_of_topic(topic) | app.offsets.groups_of_topic(topic)
        return success(body=orjson.dumps({"groupList": sorted(groups)}))

    async def system_topics(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        names = sorted(t for t in app.topics.table if app.topics.is_system_topic(t))
        return success(body=orjson.dumps({"topicList": names}))

    routes = {
        RequestCode.UPDATE_AND_CREATE_TOPIC: update_topic,
        RequestCode.GET_ALL_TOPIC_CONFIG: all_topic_config,
        RequestCode.DELETE_TOPIC_IN_BROKER: delete_topic,
        RequestCode.GET_TOPIC_STATS_INFO: topic_stats,
        RequestCode.GET_CONSUME_STATS: consume_stats,
        RequestCode.GET_BROKER_RUNTIME_INFO: runtime_info,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: update_group,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: all_groups,
        RequestCode.DELETE_SUBSCRIPTIONGROUP: delete_group,
        RequestCode.GET_ALL_CONSUMER_OFFSET: all_consumer_offsets,
        RequestCode.GET_ALL_DELAY_OFFSET: all_delay_offsets,
        RequestCode.GET_BROKER_CONFIG: get_broker_config,
        RequestCode.UPDATE_BROKER_CONFIG: update_broker_config,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: reset_offset,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: consume_by_who,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: system_topics,
    }
    for code, handler in routes.items():
        server.register(code, guarded(handler))


async def _quiet(awaitable: Any) -> None:
    with contextlib.suppress(Exception):
        await awaitable
