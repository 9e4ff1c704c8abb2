"""The broker's Prometheus collector: reads BrokerStats, the store and the tables at scrape time.

Nothing is updated per message for Prometheus: every value below is computed from the counters the
broker keeps anyway (broker/stats.py, the dispatcher's per-code route stats, the store's runtime info),
so a scrape, GET_CONSUME_STATS and GET_BROKER_RUNTIME_INFO read the same numbers. Names follow
rocketmq-exporter where it has one (so its Grafana dashboards mostly work); orbitmq_* are our own. The
mapping is documented in docs/operations.md.

Imported only when `metricsPort` is set (prometheus_client stays out of a plain broker's start-up).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
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

SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
DLQ_PREFIX = "%DLQ%"


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

        tps = GaugeMetricFamily(
            "rocketmq_producer_tps", "Messages put per second (1 min)", labels=[*base, "topic"]
        )
        size = GaugeMetricFamily(
            "rocketmq_producer_message_size", "Bytes put per second (1 min)", labels=[*base, "topic"]
        )
        put_msgs = CounterMetricFamily(
            "orbitmq_topic_put_messages", "Messages put since start", labels=[*base, "topic"]
        )
        put_bytes = CounterMetricFamily(
            "orbitmq_topic_put_bytes", "Bytes put since start", labels=[*base, "topic"]
        )
        for topic, item in stats.topic_put.items():
            rate, byte_rate = item.rates(now)
            tps.add_metric([*ids, topic], rate)
            size.add_metric([*ids, topic], byte_rate)
            put_msgs.add_metric([*ids, topic], item.nums)
            put_bytes.add_metric([*ids, topic], item.bytes)
        yield from (tps, size, put_msgs, put_bytes)

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

        group_labels = [*base, "topic", "group"]
        ctps = GaugeMetricFamily(
            "rocketmq_consumer_tps", "Messages pulled per second (1 min)", labels=group_labels
        )
        csize = GaugeMetricFamily(
            "rocketmq_consumer_message_size", "Bytes pulled per second (1 min)", labels=group_labels
        )
        get_msgs = CounterMetricFamily(
            "orbitmq_group_get_messages", "Messages pulled since start", labels=group_labels
        )
        get_bytes = CounterMetricFamily(
            "orbitmq_group_get_bytes", "Bytes pulled since start", labels=group_labels
        )
        for group, topics in stats.group_get.items():
            for topic, item in topics.items():
                rate, byte_rate = item.rates(now)
                ctps.add_metric([*ids, topic, group], rate)
                csize.add_metric([*ids, topic, group], byte_rate)
                get_msgs.add_metric([*ids, topic, group], item.nums)
                get_bytes.add_metric([*ids, topic, group], item.bytes)
        yield from (ctps, csize, get_msgs, get_bytes)
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

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, doc, labels=base)
            family.add_metric(ids, value)
            return family

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            family = CounterMetricFamily(name, doc, labels=base)
            family.add_metric(ids, value)
            return family

        yield gauge(
            "rocketmq_broker_tps", "Messages put per second, whole broker (1 min)", float(broker["sendTps"])
        )
        yield gauge(
            "rocketmq_broker_qps",
            "Messages pulled per second, whole broker (1 min)",
            float(broker["consumeTps"]),
        )
        yield gauge(
            "rocketmq_brokeruntime_msg_put_total_today_now",
            "Messages put since start",
            float(broker["msgPutTotalTodayNow"]),
        )
        yield gauge(
            "rocketmq_brokeruntime_msg_gettotal_today_now",
            "Messages pulled since start",
            float(broker["msgGetTotalTodayNow"]),
        )
        yield gauge(
            "rocketmq_brokeruntime_commitlog_disk_ratio",
            "Disk usage of the commit log's disk",
            float(info["commitLogDiskRatio"]),
        )
        yield gauge(
            "rocketmq_brokeruntime_consumequeue_disk_ratio",
            "Disk usage of the consume queues' disk",
            float(info["consumeQueueDiskRatio"]),
        )
        yield gauge(
            "rocketmq_brokeruntime_commitlogmaxoffset",
            "Commit log max offset",
            float(info["commitLogMaxOffset"]),
        )
        yield gauge(
            "rocketmq_brokeruntime_commitlogminoffset",
            "Commit log min offset",
            float(info["commitLogMinOffset"]),
        )
        yield gauge(
            "orbitmq_commitlog_bytes",
            "Bytes held in the commit log (max - min offset)",
            float(int(info["commitLogMaxOffset"]) - int(info["commitLogMinOffset"])),
        )
        yield gauge(
            "rocketmq_brokeruntime_dispatch_behind_bytes",
            "Bytes not yet dispatched",
            float(info["dispatchBehindBytes"]),
        )
        yield gauge(
            "rocketmq_brokeruntime_remain_how_manydata_toflush",
            "Bytes not yet flushed",
            float(info["remainHowManyDataToFlush"]),
        )
        yield gauge(
            "orbitmq_held_pulls",
            "Long-polling pulls waiting for messages",
            float(app.hold.held_count if app.hold else 0),
        )
        yield gauge("orbitmq_connections", "Open client connections", float(len(app.server.connections)))
        # Leak watch (testing/churn.py): the collector runs on the broker's loop, so all_tasks() is its own.
        yield gauge(
            "orbitmq_asyncio_tasks", "Tasks alive on the broker's event loop", len(asyncio.all_tasks())
        )
        yield gauge("orbitmq_threads", "Threads alive in the broker process", threading.active_count())
        flusher = store.flusher
        if flusher is not None:
            yield counter("orbitmq_flush_rounds", "Commit log flush rounds", float(flusher.flush_count))
            yield counter(
                "orbitmq_flush_seconds",
                "Time spent flushing the commit log",
                float(flusher.flush_seconds_total),
            )
            yield gauge(
                "orbitmq_flush_last_seconds",
                "Duration of the last commit log flush",
                flusher.flush_seconds_last,
            )
            yield counter(
                "orbitmq_slow_flushes",
                "Looks (one a second) that found the commit log's flushes over 500 ms: a slow disk",
                float(app.stats.slow_flushes),
            )
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
