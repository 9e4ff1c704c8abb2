"""BrokerExpiryService: forget brokers that stopped registering (RocketMQ's scanNotActiveBroker).

Every `interval` the route table drops brokers whose last registration is older than the expiry, and
closes their connections, so a broker that was merely slow re-registers over a fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from orbitmq.namesrv.route_table import RouteInfoManager
from orbitmq.transport import Connection

log = logging.getLogger("orbitmq.namesrv")


class BrokerExpiryService:
    def __init__(self, route: RouteInfoManager, *, interval: float = 10.0, first_delay: float = 5.0) -> None:
        self.route = route
        self.interval = interval
        self.first_delay = min(first_delay, interval)
        self._task: asyncio.Task[None] | None = None

    def scan_once(self) -> int:
        """One scan; the number of brokers removed."""
        expired = self.route.scan_not_active_brokers()
        for broker in expired:
            log.warning(
                "broker %s expired: no registration for %.1fs (limit %.1fs)",
                broker.broker_addr,
                broker.idle_seconds,
                self.route.expiry_seconds,
            )
            if isinstance(broker.channel, Connection):
                broker.channel.close(f"broker {broker.broker_addr} expired")
        return len(expired)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="broker-expiry")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        await asyncio.sleep(self.first_delay)
        while True:
            try:
                self.scan_once()
            except Exception:
                log.exception("broker expiry scan failed")
            await asyncio.sleep(self.interval)
