"""Broker-wide stats and consume-queue cleaning for mqadmin 4.9.8's last verbs: GET_BROKER_CONSUME_STATS,
VIEW_BROKER_STATS_DATA and CLEAN_EXPIRED_CONSUMEQUEUE (what each answers: `register`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import orjson

from orbitmq.broker.consume_stats import ConsumeStatsBuilder
from orbitmq.broker.processors.base import BadRequest, Fields, guarded, success
from orbitmq.broker.stats import StatItem, Window
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.broker.stats import BrokerStats
    from orbitmq.transport.server import RemotingServer

log = logging.getLogger("orbitmq.broker")


def stats_items(stats: BrokerStats, name: str, key: str, cluster: str) -> StatItem | list[StatItem] | None:
    """The item(s) behind a (statsName, statsKey) pair; None when RocketMQ would have none."""
    if name in ("TOPIC_PUT_NUMS", "TOPIC_PUT_SIZE"):
        return stats.topic_put.get(key)
    if name in ("GROUP_GET_NUMS", "GROUP_GET_SIZE"):
        topic, sep, group = key.rpartition("@")  # names cannot hold '@': the split is unambiguous
        return stats.group_get.get(group, {}).get(topic) if sep else None
    if name in ("BROKER_PUT_NUMS", "BROKER_GET_NUMS") and key == cluster:
        if name == "BROKER_PUT_NUMS":
            return list(stats.topic_put.values())
        return [item for topics in stats.group_get.values() for item in topics.values()]
    return None


def broker_stats_data(windows: tuple[Window, Window, Window], of_bytes: bool) -> bytes:
    out = {}
    for field, window in zip(("statsMinute", "statsHour", "statsDay"), windows, strict=True):
        total, tps, avgpt = window.snapshot(of_bytes)
        out[field] = {"avgpt": avgpt, "sum": total, "tps": tps}
    # fastjson's order: bean properties alphabetical
    return orjson.dumps({k: out[k] for k in ("statsDay", "statsHour", "statsMinute")})


def register(server: RemotingServer, app: BrokerContext) -> None:
    """The handlers of codes 317, 315 and 306:

    - GET_BROKER_CONSUME_STATS (317, `mqadmin brokerConsumeStats`): every subscription group's
      ConsumeStats per topic (broker/consume_stats.py), as a ConsumeStatsList with the total diff;
      `isOrder=true` keeps ordered topics only.
    - VIEW_BROKER_STATS_DATA (315, `mqadmin statsAll` / `exportMetrics`): one stats item's minute, hour
      and day windows as BrokerStatsData (`statsMinute`/`statsHour`/`statsDay`, each `sum`/`tps`/`avgpt`).
      Names served (BrokerStatsManager's): TOPIC_PUT_NUMS / TOPIC_PUT_SIZE (key: topic), GROUP_GET_NUMS /
      GROUP_GET_SIZE (key: topic@group), BROKER_PUT_NUMS / BROKER_GET_NUMS (key: the cluster name). An
      item never counted answers SYSTEM_ERROR "The stats <name> <key> not exist", as RocketMQ does.
    - CLEAN_EXPIRED_CONSUMEQUEUE (306, `mqadmin cleanExpiredCQ`): destroy the consume queues whose every
      entry points below the commit log's min offset; SUCCESS, which mqadmin prints as "success".
    """

    async def broker_consume_stats(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        order_only = f.opt_bool("isOrder", False)
        builder = ConsumeStatsBuilder(
            app.topics, app.offsets, app.store, app.stats, app.consumers, app.config.broker_name
        )
        groups = sorted(app.subscription_groups.table)
        return success(body=builder.broker_consume_stats(groups, app.broker_addr, order_only=order_only))

    async def view_broker_stats_data(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        name, key = f.req_str("statsName"), f.req_str("statsKey")
        found = stats_items(app.stats, name, key, app.config.broker_cluster_name)
        if found is None:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist")
        windows = app.stats.windows(found)
        return success(body=broker_stats_data(windows, of_bytes=name.endswith("_SIZE")))

    async def clean_expired_consume_queue(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        removed = app.store.clean_expired_consume_queues()
        log.warning(
            "cleanExpiredConsumeQueue requested by %s: %d queue(s) destroyed%s",
            conn.remote_address,
            len(removed),
            "".join(f" {q}@{t}" for t, q in removed[:20]),
        )
        return success()

    server.register(RequestCode.GET_BROKER_CONSUME_STATS, guarded(broker_consume_stats))
    server.register(RequestCode.VIEW_BROKER_STATS_DATA, guarded(view_broker_stats_data))
    server.register(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, guarded(clean_expired_consume_queue))
