"""`orbitmq admin` subcommands for topics, clusters and brokers (mqadmin's names and flags):
updateTopic, deleteTopic, topicList, topicRoute, topicStatus, clusterList, brokerStatus,
getBrokerConfig, updateBrokerConfig. Consumer groups are in group_commands.py.

Each runner turns AdminClient results into a Report; it knows nothing about sockets.
"""

from __future__ import annotations

import argparse
from typing import Any

from orbitmq.admin.api import AdminClient
from orbitmq.admin.registry import (
    Report,
    broker_or_cluster,
    command,
    non_negative_int,
    parse_bool,
    positive_int,
    topic_option,
)
from orbitmq.admin.table import format_pairs, format_table, format_timestamp
from orbitmq.common.errors import BrokerError
from orbitmq.protocol.perm import perm_text

# ---- topics ---------------------------------------------------------------------------------


def _update_topic_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p, broker_help="create the topic on this broker (ip:port)")
    topic_option(p)
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
    topic_option(p)
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


@command("topicRoute", "show a topic's route: brokers and queue numbers", topic_option)
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


@command("topicStatus", "per queue: min offset, max offset and last update time", topic_option)
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
