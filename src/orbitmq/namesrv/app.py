"""NamesrvApp: the NameServer's composition root (route table + KV config + server + expiry).

Usable in-process (`orbitmq serve` embeds it; tests may too): `await app.start()`, `app.address`,
`await app.stop()`. Several NameServers run side by side independently; brokers register with each.

This module wires parts together; the rules live in route_table.py and processors.py.
"""

from __future__ import annotations

import logging
from types import TracebackType

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.namesrv.housekeeping import BrokerExpiryService
from orbitmq.namesrv.kv_config import KVConfigManager
from orbitmq.namesrv.processors import NamesrvProcessors
from orbitmq.namesrv.route_table import RouteInfoManager
from orbitmq.protocol.name_guard import guard_names
from orbitmq.transport import Connection, RemotingServer
from orbitmq.transport.limits import server_limits

log = logging.getLogger("orbitmq.namesrv")


class NamesrvApp:
    def __init__(
        self,
        config: NamesrvConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.config = config if config is not None else NamesrvConfig()
        self.host = host
        self.clock = clock
        self.route = RouteInfoManager(
            clock=clock, expiry_seconds=self.config.broker_channel_expired_time_ms / 1000
        )
        self.kv = KVConfigManager(self.config.kv_config_path)
        self.processors = NamesrvProcessors(self.route, self.kv, self.config, clock=clock)
        idle = self.config.server_channel_max_idle_time_seconds
        self.server = RemotingServer(
            host,
            self.config.listen_port if port is None else port,
            name="namesrv",
            idle_timeout=float(idle) if idle > 0 else None,
            clock=clock,
            limits=server_limits(self.config),
            processor_wrapper=guard_names,
        )
        for code, processor in self.processors.table().items():
            self.server.register(code, processor)
        self.server.add_connection_listener(on_close=self._connection_closed)
        self.expiry = BrokerExpiryService(
            self.route, interval=self.config.scan_not_active_broker_interval_ms / 1000
        )
        self._started = False

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> str:
        return self.server.address

    async def start(self) -> None:
        self.kv.load()
        await self.server.start()
        self.expiry.start()
        self._started = True
        log.info("namesrv started on %s (kv config %s)", self.address, self.kv.path)

    async def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        await self.expiry.stop()
        await self.server.stop()
        log.info("namesrv on %s stopped", self.address)

    async def __aenter__(self) -> NamesrvApp:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def _connection_closed(self, conn: Connection) -> None:
        broker_addr = self.route.on_channel_destroy(conn)
        if broker_addr is not None:
            log.info("broker %s removed: its connection closed (%s)", broker_addr, conn.close_reason)
