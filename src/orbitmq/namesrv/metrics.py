"""The nameserver's Prometheus collector: brokers, topics, connections and requests, read at scrape
time from the route table and the dispatcher's route stats. Imported only when `metricsPort` is set."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from orbitmq.protocol.codes import RequestCode

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from orbitmq.namesrv.app import NamesrvApp


class NamesrvCollector(Collector):
    def __init__(self, app: NamesrvApp) -> None:
        self.app = app

    def collect(self) -> Iterator[Metric]:
        app = self.app
        labels = ["namesrv"]
        ids = [app.address]
        brokers, clusters = app.route.cluster_info()
        family = GaugeMetricFamily("orbitmq_namesrv_brokers", "Broker addresses registered", labels=labels)
        family.add_metric(ids, float(sum(len(b.broker_addrs) for b in brokers.values())))
        yield family
        family = GaugeMetricFamily("orbitmq_namesrv_clusters", "Clusters registered", labels=labels)
        family.add_metric(ids, float(len(clusters)))
        yield family
        family = GaugeMetricFamily("orbitmq_namesrv_topics", "Topics with a route", labels=labels)
        family.add_metric(ids, float(len(app.route.all_topics())))
        yield family
        family = GaugeMetricFamily("orbitmq_namesrv_connections", "Open connections", labels=labels)
        family.add_metric(ids, float(len(app.server.connections)))
        yield family
        requests = CounterMetricFamily(
            "orbitmq_namesrv_requests",
            "Requests answered, by request and response code",
            labels=[*labels, "code", "response"],
        )
        for code, route in app.server.dispatcher.route_stats().items():
            try:
                name = RequestCode(code).name
            except ValueError:
                name = str(code)
            for response, count in route.responses.items():
                requests.add_metric([*ids, name, str(response)], count)
        yield requests
