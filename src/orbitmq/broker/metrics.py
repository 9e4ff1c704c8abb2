"""The broker's Prometheus collector: computed at scrape time from what the broker counts anyway
(broker/stats.py, the dispatcher's route stats, the store's runtime info), so a scrape and the admin
requests agree and nothing is counted per message for Prometheus. Names follow rocketmq-exporter where
it has one (docs/operations.md). Imported only when metricsPort is set.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector

from orbitmq.broker.topics import SCHEDULE_TOPIC
from orbitmq.protocol.codes import RequestCode
from orbitmq.transport.dispatch import LATENCY_BOUNDS

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from orbitmq.broker.app import BrokerApp
    from orbitmq.broker.stats import StatItem

SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
DLQ_PREFIX = "%DLQ%"


# The broker-wide series: name -> (help, kind).
_RUNTIME_SERIES: dict[str, tuple[str, type[GaugeMetricFamily] | type[CounterMetricFamily]]] = {
    "rocketmq_broker_tps": ("Messages put per second, whole broker (1 min)", GaugeMetricFamily),
    "rocketmq_broker_qps": ("Messages pulled per second, whole broker (1 min)", GaugeMetricFamily),
    "rocketmq_brokeruntime_msg_put_total_today_now": ("Messages put since start", GaugeMetricFamily),
    "rocketmq_brokeruntime_msg_gettotal_today_now": ("Messages pulled since start", GaugeMetricFamily),
    "rocketmq_brokeruntime_commitlog_disk_ratio": ("Disk usage of the commit log's disk", GaugeMetricFamily),
    "rocketmq_brokeruntime_consumequeue_disk_ratio": (
        "Disk usage of the consume queues' disk",
        GaugeMetricFamily,
    ),
    "rocketmq_brokeruntime_commitlogmaxoffset": ("Commit log max offset", GaugeMetricFamily),
    "rocketmq_brokeruntime_commitlogminoffset": ("Commit log min offset", GaugeMetricFamily),
    "orbitmq_commitlog_bytes": ("Bytes held in the commit log (max - min offset)", GaugeMetricFamily),
    "rocketmq_brokeruntime_dispatch_behind_bytes": ("Bytes not yet dispatched", GaugeMetricFamily),
    "rocketmq_brokeruntime_remain_how_manydata_toflush": ("Bytes not yet flushed", GaugeMetricFamily),
    "orbitmq_held_pulls": ("Long-polling pulls waiting for messages", GaugeMetricFamily),
    "orbitmq_connections": ("Open client connections", GaugeMetricFamily),
    "orbitmq_flush_rounds": ("Commit log flush rounds", CounterMetricFamily),
    "orbitmq_flush_seconds": ("Time spent flushing the commit log", CounterMetricFamily),
    "orbitmq_flush_last_seconds": ("Duration of the last commit log flush", GaugeMetricFamily),
    "orbitmq_slow_flushes": (
        "Looks (one a second) that found the commit log's flushes over 500 ms: a slow disk",
        CounterMetricFamily,
    ),
    "orbitmq_asyncio_tasks": ("Tasks alive on the broker's event loop", GaugeMetricFamily),
    "orbitmq_threads": ("Threads alive in the broker process", GaugeMetricFamily),
}


# The traffic series of topics (put) and of groups (pulled): rate and byte rate over a minute, then
# messages and bytes since start.
_PUT_SERIES = (
    ("rocketmq_producer_tps", "Messages put per second (1 min)"),
    ("rocketmq_producer_message_size", "Bytes put per second (1 min)"),
    ("orbitmq_topic_put_messages", "Messages put since start"),
    ("orbitmq_topic_put_bytes", "Bytes put since start"),
)
_GET_SERIES = (
    ("rocketmq_consumer_tps", "Messages pulled per second (1 min)"),
    ("rocketmq_consumer_message_size", "Bytes pulled per second (1 min)"),
    ("orbitmq_group_get_messages", "Messages pulled since start"),
    ("orbitmq_group_get_bytes", "Bytes pulled since start"),
)


def _traffic(
    series: tuple[tuple[str, str], ...],
    labels: list[str],
    rows: Iterable[tuple[list[str], StatItem]],
    now: float,
) -> tuple[Metric, ...]:
    """The four traffic families of `series`, one sample per (label values, stats item) of `rows`."""
    (rate, rate_doc), (size, size_doc), (count, count_doc), (total, total_doc) = series
    families: tuple[GaugeMetricFamily | CounterMetricFamily, ...] = (
        GaugeMetricFamily(rate, rate_doc, labels=labels),
        GaugeMetricFamily(size, size_doc, labels=labels),
        CounterMetricFamily(count, count_doc, labels=labels),
        CounterMetricFamily(total, total_doc, labels=labels),
    )
    for values, item in rows:
        for family, value in zip(families, (*item.rates(now), item.nums, item.bytes), strict=True):
            family.add_metric(values, value)
    return families


def _code_name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return str(code)


class BrokerCollector(Collector):
    def __init__(self, app: BrokerApp) -> None:
        self.app = app

    def collect(self) -> Iterator[Metric]:
        app = self.app
        if app.stopping or app._store is None:
            return
        base = ["cluster", "broker"]
        ids = [app.config.broker_cluster_name, app.config.broker_name]
        stats = app.stats
        now = app.clock.monotonic()
        store = app.store

        yield from _traffic(
            _PUT_SERIES,
            [*base, "topic"],
            (([*ids, topic], item) for topic, item in stats.topic_put.items()),
            now,
        )

        offsets = GaugeMetricFamily(
            "rocketmq_producer_offset", "Sum of the topic's queue max offsets", labels=[*base, "topic"]
        )
        dlq = GaugeMetricFamily(
            "orbitmq_dlq_messages", "Messages in the group's dead letter queue", labels=[*base, "group"]
        )
        for topic, tc in list(app.topics.table.items()):
            total = sum(store.get_max_offset_in_queue(topic, q) for q in range(tc.write_queue_nums))
            offsets.add_metric([*ids, topic], total)
            if topic.startswith(DLQ_PREFIX):
                dlq.add_metric([*ids, topic[len(DLQ_PREFIX) :]], total)
        yield from (offsets, dlq)

        pulled = (
            ([*ids, topic, group], item)
            for group, topics in stats.group_get.items()
            for topic, item in topics.items()
        )
        yield from _traffic(_GET_SERIES, [*base, "topic", "group"], pulled, now)
        yield from self._lag(base, ids)
        yield from self._runtime(base, ids)
        yield from self._requests(base, ids)

    def _lag(self, base: list[str], ids: list[str]) -> Iterator[Metric]:
        app = self.app
        store = app.store
        group_labels = [*base, "topic", "group"]
        consumer_offset = GaugeMetricFamily(
            "rocketmq_consumer_offset", "Sum of the group's committed offsets", labels=group_labels
        )
        diff = GaugeMetricFamily(
            "rocketmq_group_diff", "Messages the group has not consumed yet", labels=group_labels
        )
        queue_lag = GaugeMetricFamily(
            "orbitmq_consumer_lag", "Messages behind, per queue", labels=[*group_labels, "queueid"]
        )
        delay = GaugeMetricFamily(
            "rocketmq_group_get_latency_by_storetime",
            "Age in ms of the oldest message the group has not consumed (0 when caught up)",
            labels=group_labels,
        )
        now_ms = app.clock.now_ms()
        for key, table in list(app.offsets.table.items()):
            topic, _, group = key.partition("@")
            tc = app.topics.select(topic)
            if tc is None:
                continue
            committed_sum = lag_sum = oldest_ms = 0
            for q in range(tc.write_queue_nums):
                max_offset = store.get_max_offset_in_queue(topic, q)
                committed = max(table.get(q, 0), 0)
                lag = max(max_offset - committed, 0)
                committed_sum += committed
                lag_sum += lag
                queue_lag.add_metric([*ids, topic, group, str(q)], lag)
                if lag:
                    stored = store.get_message_store_timestamp(topic, q, committed)
                    if stored > 0:
                        oldest_ms = max(oldest_ms, now_ms - stored)
            consumer_offset.add_metric([*ids, topic, group], committed_sum)
            diff.add_metric([*ids, topic, group], lag_sum)
            delay.add_metric([*ids, topic, group], oldest_ms)
        yield from (consumer_offset, diff, queue_lag, delay)

        backlog = GaugeMetricFamily(
            "orbitmq_delay_backlog", "Delayed messages not yet delivered, per level", labels=[*base, "level"]
        )
        for level in range(1, len(app.delay_levels_ms) + 1):
            pending = store.get_max_offset_in_queue(SCHEDULE_TOPIC, level - 1) - app.schedule.offsets.get(
                level, 0
            )
            backlog.add_metric([*ids, str(level)], max(pending, 0))
        yield backlog

    def _runtime(self, base: list[str], ids: list[str]) -> Iterator[Metric]:
        app = self.app
        store = app.store
        info = store.runtime_info()
        broker = app.stats.runtime_info()
        values: dict[str, str | float] = {
            "rocketmq_broker_tps": broker["sendTps"],
            "rocketmq_broker_qps": broker["consumeTps"],
            "rocketmq_brokeruntime_msg_put_total_today_now": broker["msgPutTotalTodayNow"],
            "rocketmq_brokeruntime_msg_gettotal_today_now": broker["msgGetTotalTodayNow"],
            "rocketmq_brokeruntime_commitlog_disk_ratio": info["commitLogDiskRatio"],
            "rocketmq_brokeruntime_consumequeue_disk_ratio": info["consumeQueueDiskRatio"],
            "rocketmq_brokeruntime_commitlogmaxoffset": info["commitLogMaxOffset"],
            "rocketmq_brokeruntime_commitlogminoffset": info["commitLogMinOffset"],
            "orbitmq_commitlog_bytes": int(info["commitLogMaxOffset"]) - int(info["commitLogMinOffset"]),
            "rocketmq_brokeruntime_dispatch_behind_bytes": info["dispatchBehindBytes"],
            "rocketmq_brokeruntime_remain_how_manydata_toflush": info["remainHowManyDataToFlush"],
            "orbitmq_held_pulls": app.hold.held_count if app.hold else 0,
            "orbitmq_connections": len(app.server.connections),
            "orbitmq_asyncio_tasks": len(asyncio.all_tasks()),
            "orbitmq_threads": threading.active_count(),
        }
        flusher = store.flusher
        if flusher is not None:
            values["orbitmq_flush_rounds"] = flusher.flush_count
            values["orbitmq_flush_seconds"] = flusher.flush_seconds_total
            values["orbitmq_flush_last_seconds"] = flusher.flush_seconds_last
            values["orbitmq_slow_flushes"] = app.stats.slow_flushes
        for name, value in values.items():
            doc, kind = _RUNTIME_SERIES[name]
            family = kind(name, doc, labels=base)
            family.add_metric(ids, float(value))
            yield family
        ha = app.replication.ha
        lag = GaugeMetricFamily(
            "orbitmq_replication_lag_bytes", "Master: bytes the slaves have not acknowledged", labels=base
        )
        slaves = GaugeMetricFamily("orbitmq_replication_slaves", "Master: connected slaves", labels=base)
        if ha is not None:
            lag.add_metric(ids, float(max(store.get_max_phy_offset() - ha.slave_ack_offset, 0)))
            slaves.add_metric(ids, float(ha.connected_slaves))
        yield lag
        yield slaves

    def _requests(self, base: list[str], ids: list[str]) -> Iterator[Metric]:
        app = self.app
        requests = CounterMetricFamily(
            "orbitmq_requests",
            "Requests answered, by request and response code",
            labels=[*base, "code", "response"],
        )
        latency = HistogramMetricFamily(
            "orbitmq_put_latency_seconds",
            "Send request latency (store, flush and replication waits)",
            labels=base,
        )
        buckets = [0] * (len(LATENCY_BOUNDS) + 1)
        latency_sum = 0.0
        for code, route in app.server.dispatcher.route_stats().items():
            name = _code_name(code)
            for response, count in route.responses.items():
                requests.add_metric([*ids, name, str(response)], count)
            if code in SEND_CODES:
                buckets = [a + b for a, b in zip(buckets, route.latency_buckets, strict=True)]
                latency_sum += route.latency_sum
        cumulative = 0
        pairs: list[tuple[str, float]] = []
        for bound, count in zip([*map(str, LATENCY_BOUNDS), "+Inf"], buckets, strict=True):
            cumulative += count
            pairs.append((bound, cumulative))
        latency.add_metric(ids, pairs, latency_sum)
        yield from (requests, latency)
