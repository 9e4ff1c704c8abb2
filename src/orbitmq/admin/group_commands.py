"""`orbitmq admin` subcommands for subscription groups and consumers (mqadmin's names and flags):
updateSubGroup, deleteSubGroup, consumerProgress, consumerConnection, resetOffsetByTime.

Each runner turns AdminClient results into a Report; it knows nothing about sockets.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from orbitmq.admin.api import AdminClient, AdminError, group_config
from orbitmq.admin.registry import (
    Report,
    broker_or_cluster,
    command,
    group_option,
    non_negative_int,
    parse_bool,
    topic_option,
)
from orbitmq.admin.table import format_table, format_timestamp, parse_time
from orbitmq.admin.views import ConsumerProgress
from orbitmq.common.errors import BrokerError, ClientError

# updateSubGroup's options: (flag, mqadmin name, SubscriptionGroupConfig field, parser, help).
_GROUP_OPTIONS: tuple[tuple[str, str, str, Callable[[str], object], str], ...] = (
    ("-s", "--consumeEnable", "consume_enable", parse_bool, "may the group consume (true/false)"),
    (
        "-m",
        "--consumeFromMinEnable",
        "consume_from_min_enable",
        parse_bool,
        "start from the minimum offset (true/false)",
    ),
    (
        "-d",
        "--consumeBroadcastEnable",
        "consume_broadcast_enable",
        parse_bool,
        "may the group consume by broadcast (true/false)",
    ),
    ("-q", "--retryQueueNums", "retry_queue_nums", non_negative_int, "retry queue count"),
    ("-r", "--retryMaxTimes", "retry_max_times", non_negative_int, "retries before the dead-letter queue"),
    ("-i", "--brokerId", "broker_id", non_negative_int, "broker id to consume from"),
    (
        "-w",
        "--whichBrokerWhenConsumeSlowly",
        "which_broker_when_consume_slowly",
        int,
        "broker id to consume from when consumption is slow",
    ),
    (
        "-a",
        "--notifyConsumerIdsChanged",
        "notify_consumer_ids_changed_enable",
        parse_bool,
        "notify consumers when the group's members change (true/false)",
    ),
)
_GROUP_FIELDS = tuple(option[2] for option in _GROUP_OPTIONS)


def _update_group_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p)
    group_option(p)
    for flag, name, dest, parse, text in _GROUP_OPTIONS:
        p.add_argument(flag, name, dest=dest, type=parse, help=text)


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
    group_option(p)
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
    group_option(p, required=False)
    topic_option(p, required=False)
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


@command("consumerConnection", "a group's online clients and subscriptions", group_option)
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
    group_option(p)
    topic_option(p)
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
