"""`orbitmq admin` subcommands over the broker-wide stats (mqadmin's names and flags): brokerConsumeStats,
statsAll, cleanExpiredCQ. Output columns follow mqadmin's; --json gives the same data as objects."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from orbitmq.admin.registry import Report, broker_or_cluster, command, parse_bool
from orbitmq.admin.table import format_table, format_timestamp
from orbitmq.common.errors import BrokerError, OrbitError

if TYPE_CHECKING:
    from orbitmq.admin.api import AdminClient

RETRY_PREFIX, DLQ_PREFIX = "%RETRY%", "%DLQ%"


def _broker_consume_stats_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", required=True, help="broker address ip:port")
    p.add_argument("-t", "--timeoutMillis", dest="timeout_ms", type=int, help="request timeout in ms (50000)")
    p.add_argument("-l", "--level", dest="level", type=int, default=0, help="print queues whose diff >= this")
    p.add_argument("-o", "--order", dest="order", type=parse_bool, default=False, help="ordered topics only")


@command("brokerConsumeStats", "every group's consume progress on one broker", _broker_consume_stats_args)
async def broker_consume_stats(admin: AdminClient, args: argparse.Namespace) -> Report:
    timeout = (args.timeout_ms or 50000) / 1000
    stats = await admin.broker_consume_stats(args.broker_addr, is_order=args.order, timeout=timeout)
    rows: list[tuple[Any, ...]] = []
    for group, per_topic in stats.groups.items():
        for one in per_topic:
            for mq in sorted(one.offset_table, key=lambda m: (m.topic, m.broker_name, m.queue_id)):
                w = one.offset_table[mq]
                diff = w.broker_offset - w.consumer_offset
                if diff < args.level or w.last_timestamp <= 0:  # mqadmin prints consumed queues only
                    continue
                rows.append(
                    (
                        mq.topic,
                        group,
                        mq.broker_name,
                        mq.queue_id,
                        w.broker_offset,
                        w.consumer_offset,
                        diff,
                        format_timestamp(w.last_timestamp),
                    )
                )
    headers = [
        "#Topic",
        "#Group",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
        "#LastTime",
    ]
    text = format_table(headers, rows) + f"\n\nDiff Total: {stats.total_diff}"
    data = {
        "brokerAddr": stats.broker_addr,
        "totalDiff": stats.total_diff,
        "queues": [dict(zip([h.lstrip("#") for h in headers], row, strict=True)) for row in rows],
    }
    return Report(text, data)


def _stats_all_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--activeTopic", dest="active", action="store_true", help="print active topics only")
    p.add_argument("-t", "--topic", dest="topic", help="print this topic only")


def _day_sum(windows: dict[str, Any]) -> int:
    """mqadmin's compute24HourSum: the day window's sum, else the hour's, else the minute's."""
    for name in ("statsDay", "statsHour", "statsMinute"):
        if windows[name].sum:
            return int(windows[name].sum)
    return 0


async def _stats_or_none(admin: AdminClient, addr: str, name: str, key: str) -> dict[str, Any] | None:
    try:
        return await admin.view_broker_stats_data(addr, name, key)
    except (OrbitError, OSError):  # never counted on that broker: mqadmin skips it too
        return None


@command("statsAll", "put/get TPS and 24-hour counts of every topic and its consumer groups", _stats_all_args)
async def stats_all(admin: AdminClient, args: argparse.Namespace) -> Report:
    topics = [args.topic] if args.topic else await admin.topic_list()
    rows: list[tuple[Any, ...]] = []
    for topic in topics:
        if topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
            continue
        try:
            masters = list((await admin.topic_masters(topic)).values())
        except OrbitError:
            continue
        in_tps, in_day = 0.0, 0
        for addr in masters:
            found = await _stats_or_none(admin, addr, "TOPIC_PUT_NUMS", topic)
            if found is not None:
                in_tps += found["statsMinute"].tps
                in_day += _day_sum(found)
        groups: set[str] = set()
        for addr in masters:
            try:
                groups.update(await admin.topic_consumer_groups(addr, topic))
            except BrokerError:
                continue
        if not groups and (not args.active or in_day > 0):
            rows.append((topic, "", 0, f"{in_tps:.2f}", "", in_day, "NO_CONSUMER"))
        for group in sorted(groups):
            out_tps, out_day = 0.0, 0
            for addr in masters:
                found = await _stats_or_none(admin, addr, "GROUP_GET_NUMS", f"{topic}@{group}")
                if found is not None:
                    out_tps += found["statsMinute"].tps
                    out_day += _day_sum(found)
            try:
                accumulation = max((await admin.consumer_progress(group, topic)).diff_total, 0)
            except (OrbitError, OSError):
                accumulation = 0
            if not args.active or in_day > 0 or out_day > 0:
                rows.append((topic, group, accumulation, f"{in_tps:.2f}", f"{out_tps:.2f}", in_day, out_day))
    headers = [
        "#Topic",
        "#Consumer Group",
        "#Accumulation",
        "#InTPS",
        "#OutTPS",
        "#InMsg24Hour",
        "#OutMsg24Hour",
    ]
    data = [dict(zip([h.lstrip("#") for h in headers], row, strict=True)) for row in rows]
    return Report(format_table(headers, rows), data)


@command(
    "cleanExpiredCQ", "drop consume queues whose messages the commit log no longer holds", broker_or_cluster
)
async def clean_expired_cq(admin: AdminClient, args: argparse.Namespace) -> Report:
    results = await admin.clean_expired_consume_queue(broker_addr=args.broker_addr, cluster=args.cluster)
    # mqadmin prints the last broker's answer only ("success" / "false"); we print each broker's.
    text = "\n".join(f"{addr}: {'success' if ok else 'false'}" for addr, ok in results.items()) or "false"
    return Report(text, results)
