"""The Prometheus endpoint: `GET /metrics` on its own HTTP port, served on the process's event loop.

On the server's loop, not on prometheus_client's own thread: the collectors read the broker's tables,
which only the loop mutates, so a scrape sees a consistent view without any lock. Imported only when a
metrics port is configured, so servers without one never load prometheus_client or aiohttp.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.registry import Collector

log = logging.getLogger("orbitmq.metrics")


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self._requested_port = port
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/", self._metrics)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port, reuse_address=True)
        await site.start()
        self._runner = runner
        addresses = runner.addresses
        self.port = int(addresses[0][1]) if addresses else self._requested_port
        log.debug("metrics listening on %s", self.url)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


async def start_metrics(collectors: Iterable[Collector], host: str, port: int) -> MetricsServer:
    """Serve `collectors` plus process RSS/CPU/file descriptors (prometheus_client's ProcessCollector)."""
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    for collector in collectors:
        registry.register(collector)
    server = MetricsServer(registry, host, port)
    await server.start()
    return server
