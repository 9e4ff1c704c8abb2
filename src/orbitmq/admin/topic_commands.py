"""`orbitmq admin` subcommands for topics, clusters, brokers and consumer groups (mqadmin's names and
flags): updateTopic, deleteTopic, topicList, topicRoute, topicStatus, clusterList, brokerStatus,
getBrokerConfig, updateBrokerConfig, updateSubGroup, deleteSubGroup, consumerProgress,
consumerConnection, resetOffsetByTime.

Each runner turns AdminClient results into a Report; it knows nothing about sockets.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from orbitmq.admin.api import AdminClient, AdminError, group_config
from orbitmq.admin.registry import (
    Report,
    broker_or_cluster,
    command,
    non_negative_int,
    parse_bool,
    positive_int,
)
from orbitmq.admin.table import format_pairs, format_table, format_timestamp, parse_time
from orbitmq.admin.views import ConsumerProgress
from orbitmq.common.errors import BrokerError, ClientError
from orbitmq.protocol.codes import PermName


def _topic(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("-t", "--topic", required=required, help="topic name")


def _group(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("-g", "--groupName", "--consumerGroup", dest="group", required=required, help="group name")


def perm_text(perm: int) -> str:
    """Permission bits as mqadmin's PermName.perm2String: R, W, X (inherit) or -."""
    return (
        ("R" if perm & PermName.READ else "-")
        + ("W" if perm & PermName.WRITE else "-")
        + ("X" if perm & PermName.INHERIT else "-")
    )


# ---- topics ---------------------------------------------------------------------------------


def _update_topic_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p, broker_help="create the topic on this broker (ip:port)")
    _topic(p)
    p.add_argument(
        "-r",
        "--readQueueNums",
        dest="read_queue_nums",
        type=positive_int,
        default=8,
        help="read queue count (8)",
    )
    p.add_argument(
        "-w",
        "--writeQueueNums",
        dest="write_queue_nums",
        type=positive_int,
        default=8,
        help="write queue count (8)",
    )
    p.add_argument("-p", "--perm", type=non_negative_int, default=6, help="permission: 2 W, 4 R, 6 RW")
    p.add_argument("-o", "--order", type=parse_bool, default=False, help="ordered topic (true/false)")
    p.add_argument("-u", "--unit", type=parse_bool, default=False, help="accepted, ignored (unit mode)")
    p.add_argument("-s", "--hasUnitSub", type=parse_bool, default=False, help="accepted, ignored")


@command(
    "updateTopic",
    "create or update a topic on a broker (-b) or every master of a cluster (-c)",
    _update_topic_args,
)
async def update_topic(admin: AdminClient, args: argparse.Namespace) -> Report:
    targets = await admin.update_topic(
        args.topic,
        broker_addr=args.broker_addr,
        cluster=args.cluster,
        read_queue_nums=args.read_queue_nums,
        write_queue_nums=args.write_queue_nums,
        perm=args.perm,
        order=args.order,
    )
    config = {
        "topicName": args.topic,
        "readQueueNums": args.read_queue_nums,
        "writeQueueNums": args.write_queue_nums,
        "perm": args.perm,
        "order": args.order,
    }
    lines = [f"create topic to {addr} success." for addr in targets]
    lines.append(
        f"TopicConfig [topicName={args.topic}, readQueueNums={args.read_queue_nums}, "
        f"writeQueueNums={args.write_queue_nums}, perm={perm_text(args.perm)}, "
        f"order={str(args.order).lower()}]"
    )
    return Report("\n".join(lines), {"brokers": targets, "topicConfig": config})


def _delete_topic_args(p: argparse.ArgumentParser) -> None:
    _topic(p)
    p.add_argument("-c", "--clusterName", dest="cluster", required=True, help="delete from this cluster")


@command(
    "deleteTopic",
    "delete a topic from every master of a cluster and from the name servers",
    _delete_topic_args,
)
async def delete_topic(admin: AdminClient, args: argparse.Namespace) -> Report:
    targets = await admin.delete_topic(args.topic, args.cluster)
    text = (
        f"delete topic [{args.topic}] from cluster [{args.cluster}] success.\n"
        f"delete topic [{args.topic}] from NameServer success."
    )
    return Report(text, {"topic": args.topic, "cluster": args.cluster, "brokers": targets})


def _topic_list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-c", "--clusterModel", dest="by_cluster", action="store_true", help="show each topic's cluster"
    )


@command("topicList", "list the topics the name server knows", _topic_list_args)
async def topic_list(admin: AdminClient, args: argparse.Namespace) -> Report:
    if not args.by_cluster:
        topics = await admin.topic_list()
        return Report("\n".join(topics), topics)
    info = await admin.cluster_info()
    rows = []
    for cluster in sorted(info.cluster_addr_table):
        rows += [(cluster, topic) for topic in await admin.topics_by_cluster(cluster)]
    return Report(
        format_table(["#Cluster Name", "#Topic"], rows), [{"cluster": c, "topic": t} for c, t in rows]
    )


@command("topicRoute", "show a topic's route: brokers and queue numbers", _topic)
async def topic_route(admin: AdminClient, args: argparse.Namespace) -> Report:
    route = await admin.topic_route(args.topic)
    queues = format_table(
        ["#Broker Name", "#Read Queues", "#Write Queues", "#Perm", "#Sys Flag"],
        [
            (qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, perm_text(qd.perm), qd.topic_sys_flag)
            for qd in sorted(route.queue_datas, key=lambda q: q.broker_name)
        ],
    )
    brokers = format_table(
        ["#Cluster Name", "#Broker Name", "#BID", "#Addr"],
        [
            (bd.cluster, bd.broker_name, bid, addr)
            for bd in sorted(route.broker_datas, key=lambda b: b.broker_name)
            for bid, addr in sorted(bd.broker_addrs.items())
        ],
    )
    text = f"{queues}\n\n{brokers}"
    if route.order_topic_conf:
        text += f"\n\norderTopicConf: {route.order_topic_conf}"
    return Report(text, route.to_obj())


@command("topicStatus", "per queue: min offset, max offset and last update time", _topic)
async def topic_status(admin: AdminClient, args: argparse.Namespace) -> Report:
    rows = await admin.topic_status(args.topic)
    text = format_table(
        ["#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"],
        [
            (r.broker_name, r.queue_id, r.min_offset, r.max_offset, format_timestamp(r.last_update_timestamp))
            for r in rows
        ],
    )
    return Report(text, [r.to_json() for r in rows])


# ---- clusters and brokers -------------------------------------------------------------------


def _cluster_list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterName", dest="cluster", help="only this cluster")


@command("clusterList", "list clusters and their brokers with version and traffic", _cluster_list_args)
async def cluster_list(admin: AdminClient, args: argparse.Namespace) -> Report:
    rows: list[tuple[Any, ...]] = []
    data = []
    for entry in await admin.brokers(args.cluster):
        try:
            info = await admin.broker_runtime_info(entry.address)
        except (BrokerError, OSError) as exc:
            info = {"error": str(exc)}
        rows.append(
            (
                entry.cluster,
                entry.broker_name,
                entry.broker_id,
                entry.address,
                info.get("brokerVersionDesc", "-"),
                info.get("putTps", "-").split(" ")[0],
                info.get("getTransferedTps", "-").split(" ")[0],
                info.get("msgPutTotalTodayNow", info.get("putMessageTimesTotal", "-")),
                info.get("commitLogDiskRatio", "-"),
            )
        )
        data.append({**entry.to_json(), "runtime": info})
    text = format_table(
        [
            "#Cluster Name",
            "#Broker Name",
            "#BID",
            "#Addr",
            "#Version",
            "#InTPS",
            "#OutTPS",
            "#InTotal",
            "#SPACE",
        ],
        rows,
    )
    return Report(text, data)


def _broker_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p)


def _per_broker(blocks: dict[str, str]) -> str:
    return "\n".join(f"============{addr}============\n{body}" for addr, body in blocks.items())


@command("brokerStatus", "a broker's runtime statistics (GET_BROKER_RUNTIME_INFO)", _broker_args)
async def broker_status(admin: AdminClient, args: argparse.Namespace) -> Report:
    targets = await admin.broker_targets(args.broker_addr, args.cluster, masters_only=False)
    data = {addr: await admin.broker_runtime_info(addr) for addr in targets}
    blocks = {addr: format_pairs(sorted(table.items())) for addr, table in data.items()}
    text = next(iter(blocks.values())) if args.broker_addr else _per_broker(blocks)
    return Report(text, data if not args.broker_addr else data[args.broker_addr])


@command("getBrokerConfig", "a broker's configuration (GET_BROKER_CONFIG)", _broker_args)
async def get_broker_config(admin: AdminClient, args: argparse.Namespace) -> Report:
    targets = await admin.broker_targets(args.broker_addr, args.cluster, masters_only=False)
    data = {addr: await admin.broker_config(addr) for addr in targets}
    blocks = {addr: format_pairs(sorted(props.items()), sep=" = ") for addr, props in data.items()}
    return Report(_per_broker(blocks), data)


def _update_broker_config_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p)
    p.add_argument("-k", "--key", required=True, help="config key, e.g. brokerPermission")
    p.add_argument("-v", "--value", required=True, help="config value")


@command(
    "updateBrokerConfig", "change one broker config value (UPDATE_BROKER_CONFIG)", _update_broker_config_args
)
async def update_broker_config(admin: AdminClient, args: argparse.Namespace) -> Report:
    targets = await admin.broker_targets(args.broker_addr, args.cluster, masters_only=False)
    for addr in targets:
        await admin.update_broker_config(addr, {args.key: args.value})
    text = "\n".join(f"update broker config success, {addr}" for addr in targets)
    return Report(text, {"brokers": targets, "key": args.key, "value": args.value})


# ---- subscription groups and consumers ------------------------------------------------------


def _update_group_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p)
    _group(p)
    p.add_argument(
        "-s",
        "--consumeEnable",
        dest="consume_enable",
        type=parse_bool,
        help="may the group consume (true/false)",
    )
    p.add_argument(
        "-m",
        "--consumeFromMinEnable",
        dest="consume_from_min_enable",
        type=parse_bool,
        help="start from the minimum offset (true/false)",
    )
    p.add_argument(
        "-d",
        "--consumeBroadcastEnable",
        dest="consume_broadcast_enable",
        type=parse_bool,
        help="may the group consume by broadcast (true/false)",
    )
    p.add_argument(
        "-q", "--retryQueueNums", dest="retry_queue_nums", type=non_negative_int, help="retry queue count"
    )
    p.add_argument(
        "-r",
        "--retryMaxTimes",
        dest="retry_max_times",
        type=non_negative_int,
        help="retries before the dead-letter queue",
    )
    p.add_argument(
        "-i", "--brokerId", dest="broker_id", type=non_negative_int, help="broker id to consume from"
    )
    p.add_argument(
        "-w",
        "--whichBrokerWhenConsumeSlowly",
        dest="which_broker_when_consume_slowly",
        type=int,
        help="broker id to consume from when consumption is slow",
    )
    p.add_argument(
        "-a",
        "--notifyConsumerIdsChanged",
        dest="notify_consumer_ids_changed_enable",
        type=parse_bool,
        help="notify consumers when the group's members change (true/false)",
    )


_GROUP_FIELDS = (
    "consume_enable",
    "consume_from_min_enable",
    "consume_broadcast_enable",
    "retry_queue_nums",
    "retry_max_times",
    "broker_id",
    "which_broker_when_consume_slowly",
    "notify_consumer_ids_changed_enable",
)


@command("updateSubGroup", "create or update a subscription group on a broker or cluster", _update_group_args)
async def update_sub_group(admin: AdminClient, args: argparse.Namespace) -> Report:
    config = group_config(args.group, **{name: getattr(args, name) for name in _GROUP_FIELDS})
    targets = await admin.broker_targets(args.broker_addr, args.cluster)
    for addr in targets:
        await admin.update_subscription_group(addr, config)
    lines = [f"create subscription group to {addr} success." for addr in targets]
    lines.append(config.to_json().decode())
    return Report("\n".join(lines), {"brokers": targets, "config": config.to_obj()})


def _delete_group_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p)
    _group(p)
    p.add_argument(
        "-r",
        "--removeOffset",
        dest="remove_offset",
        type=parse_bool,
        default=False,
        help="also remove the group's offsets (true/false, default false)",
    )


@command("deleteSubGroup", "delete a subscription group from a broker or cluster", _delete_group_args)
async def delete_sub_group(admin: AdminClient, args: argparse.Namespace) -> Report:
    targets = await admin.broker_targets(args.broker_addr, args.cluster)
    for addr in targets:
        await admin.delete_subscription_group(addr, args.group, remove_offset=args.remove_offset)
    text = "\n".join(
        f"delete subscription group [{args.group}] from broker [{addr}] success." for addr in targets
    )
    return Report(text, {"group": args.group, "brokers": targets})


def _progress_args(p: argparse.ArgumentParser) -> None:
    _group(p, required=False)
    _topic(p, required=False)
    p.add_argument(
        "-s",
        "--showClientIP",
        dest="show_client_ip",
        type=parse_bool,
        default=False,
        help="show the client's IP (true/false, default false)",
    )


@command(
    "consumerProgress", "a group's lag per queue (GET_CONSUME_STATS); all groups without -g", _progress_args
)
async def consumer_progress(admin: AdminClient, args: argparse.Namespace) -> Report:
    if not args.group:
        return await _all_groups_progress(admin)
    progress = await admin.consumer_progress(args.group, args.topic)
    client_of: dict[tuple[str, str, int], str] = {}
    if args.show_client_ip:
        client_of = await _client_ips(admin, progress)
    headers = [
        "#Topic",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Client IP",
        "#Diff",
        "#LastTime",
    ]
    rows = [
        (
            q.topic,
            q.broker_name,
            q.queue_id,
            q.broker_offset,
            q.consumer_offset,
            client_of.get((q.topic, q.broker_name, q.queue_id), "N/A"),
            q.diff,
            format_timestamp(q.last_timestamp),
        )
        for q in progress.queues
    ]
    text = (
        format_table(headers, rows)
        + f"\n\nConsume TPS: {progress.consume_tps:.2f}\nDiff Total: {progress.diff_total}"
    )
    return Report(text, progress.to_json())


async def _client_ips(admin: AdminClient, progress: ConsumerProgress) -> dict[tuple[str, str, int], str]:
    """Which client holds each queue is only known to the clients (GET_CONSUMER_RUNNING_INFO), which
    orbitmq does not ask yet: with exactly one online client, every queue is its."""
    try:
        conn = await admin.consumer_connection(progress.group)
    except AdminError:
        return {}
    if len(conn.connection_set) != 1:
        return {}
    addr = conn.connection_set[0].client_addr
    return {(q.topic, q.broker_name, q.queue_id): addr for q in progress.queues}


async def _all_groups_progress(admin: AdminClient) -> Report:
    groups: set[str] = set()
    for entry in await admin.master_brokers():
        groups |= set(await admin.subscription_groups(entry.address))
    rows = []
    for group in sorted(groups):
        try:
            progress = await admin.consumer_progress(group)
        except (AdminError, BrokerError):
            continue
        rows.append((group, len(progress.queues), f"{progress.consume_tps:.2f}", progress.diff_total))
    text = format_table(["#Group", "#Queues", "#TPS", "#Diff Total"], rows)
    data = [{"group": g, "queues": n, "consumeTps": float(t), "diffTotal": d} for g, n, t, d in rows]
    return Report(text, data)


@command("consumerConnection", "a group's online clients and subscriptions", _group)
async def consumer_connection(admin: AdminClient, args: argparse.Namespace) -> Report:
    conn = await admin.consumer_connection(args.group)
    clients = format_table(
        ["#ClientId", "#ClientAddr", "#Language", "#Version"],
        [
            (c.client_id, c.client_addr, c.language, c.version)
            for c in sorted(conn.connection_set, key=lambda c: c.client_id)
        ],
    )
    subs = format_table(
        ["#Topic", "#SubExpression"],
        [(topic, sd.sub_string) for topic, sd in sorted(conn.subscription_table.items())],
    )
    text = (
        f"{clients}\n\nBelow is subscription:\n{subs}\n\n"
        f"ConsumeType: {conn.consume_type or '-'}\nMessageModel: {conn.message_model or '-'}\n"
        f"ConsumeFromWhere: {conn.consume_from_where or '-'}"
    )
    return Report(text, conn.to_obj())


def _reset_args(p: argparse.ArgumentParser) -> None:
    _group(p)
    _topic(p)
    p.add_argument(
        "-s",
        "--timestamp",
        required=True,
        help="epoch ms (-1: the end of each queue), 'now', or yyyy-MM-dd#HH:mm:ss:SSS (local time)",
    )
    p.add_argument(
        "-f", "--force", type=parse_bool, default=True, help="also move offsets forward (default true)"
    )
    p.add_argument("-c", "--cplus", type=parse_bool, default=False, help="accepted, ignored")


@command("resetOffsetByTime", "move a group's offsets on a topic to a point in time", _reset_args)
async def reset_offset_by_time(admin: AdminClient, args: argparse.Namespace) -> Report:
    try:
        timestamp = parse_time(args.timestamp, now_ms=int(time.time() * 1000))
    except ValueError as exc:
        raise ClientError(str(exc)) from None
    entries = await admin.reset_offset_by_time(args.group, args.topic, timestamp, force=args.force)
    text = (
        f"rollback consumer offset by specified consumerGroup[{args.group}], topic[{args.topic}], "
        f"force[{str(args.force).lower()}], timestamp(string)[{args.timestamp}], "
        f"timestamp(long)[{timestamp}]\n"
        + format_table(
            ["#brokerName", "#queueId", "#offset"], [(e.broker_name, e.queue_id, e.offset) for e in entries]
        )
    )
    return Report(text, {"timestamp": timestamp, "offsets": [e.to_json() for e in entries]})
