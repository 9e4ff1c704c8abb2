"""The operations endpoints a server process can run beside its servers, on the same loop: the
Prometheus endpoint (broker and/or nameserver collectors) and the web console. `orbitmq serve` uses it
for `--metrics-port` / `metricsPort` and `--console-port`. aiohttp and prometheus_client are imported
only for an endpoint that is actually configured."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orbitmq.broker.app import BrokerApp
    from orbitmq.namesrv.app import NamesrvApp
    from orbitmq.transport.metrics_http import MetricsServer


def _ops_import(module: str, feature: str) -> Any:
    """The module, or a ValueError the entry points print as one line (the ops extra is optional)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"{feature} needs the ops extra (pip install 'orbitmq[ops]'): {exc}") from None


class OpsEndpoints:
    def __init__(self) -> None:
        self.announce: list[str] = []  # the `... listening on URL` lines to print
        self._metrics: MetricsServer | None = None
        self._console: Any = None  # aiohttp AppRunner

    async def start(
        self,
        *,
        broker: BrokerApp | None,
        namesrv: NamesrvApp | None,
        host: str,
        metrics_port: int = -1,
        console_port: int | None = None,
    ) -> None:
        """Start what is configured: metrics when `metrics_port >= 0`, the console when `console_port`
        is given (it needs `namesrv`)."""
        if metrics_port >= 0:
            start_metrics = _ops_import("orbitmq.transport.metrics_http", "metricsPort").start_metrics

            collectors: list[Any] = []
            if broker is not None:
                from orbitmq.broker.metrics import BrokerCollector

                collectors.append(BrokerCollector(broker))
            if namesrv is not None:
                from orbitmq.namesrv.metrics import NamesrvCollector

                collectors.append(NamesrvCollector(namesrv))
            self._metrics = await start_metrics(collectors, host, metrics_port)
            self.announce.append(f"metrics listening on {self._metrics.url}")
        if console_port is not None and namesrv is not None:
            start_console = _ops_import("orbitmq.console.app", "--console-port").start_console

            self._console, url = await start_console(namesrv.address, host, console_port)
            self.announce.append(f"console listening on {url}")

    async def stop(self) -> None:
        console, self._console = self._console, None
        if console is not None:
            await console.cleanup()
        metrics, self._metrics = self._metrics, None
        if metrics is not None:
            await metrics.stop()
