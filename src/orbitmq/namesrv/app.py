"""NamesrvApp: the NameServer's composition root (route table, KV config, server, broker expiry).
`orbitmq serve` embeds it: `await app.start()`, `app.address`, `await app.stop()`. The rules live in
route_table.py and processors.py.
"""

from __future__ import annotations

import logging
from types import TracebackType

from orbitmq.acl import AccessPolicy, AclError, PlainAccessValidator
from orbitmq.acl.refusals import RefusalLog
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.namesrv.housekeeping import BrokerExpiryService
from orbitmq.namesrv.kv_config import KVConfigManager
from orbitmq.namesrv.processors import NamesrvProcessors
from orbitmq.namesrv.route_table import RouteInfoManager
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.name_guard import guard_names
from orbitmq.transport import Connection, RemotingServer
from orbitmq.transport.limits import server_limits
from orbitmq.transport.tls import TlsServerSettings

log = logging.getLogger("orbitmq.namesrv")

ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
# What a nameserver with aclEnable=true lets only signed admin accounts do (orbitmq's own rule).
NAMESRV_WRITE_CODES = frozenset(
    {
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.PUT_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        RequestCode.UPDATE_NAMESRV_CONFIG,
        RequestCode.GET_NAMESRV_CONFIG,
    }
)


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
            tls=TlsServerSettings.from_properties(self.config.extra),
            limits=server_limits(self.config),
            processor_wrapper=guard_names,
        )
        for code, processor in self.processors.table().items():
            self.server.register(code, processor)
        self.acl: PlainAccessValidator | None = None
        self._refusals = RefusalLog(log)
        if self.config.acl_enable:
            self.acl = PlainAccessValidator(
                self.config.acl_file,
                policy=AccessPolicy(admin_codes=NAMESRV_WRITE_CODES, checked_codes=NAMESRV_WRITE_CODES),
            )
            self.server.set_request_hook(self._check_access)
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

    def _check_access(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        assert self.acl is not None
        try:
            self.acl.check(request, conn.remote_address)
        except AclError as exc:
            self._refusals.refused(request.code, conn.remote_address, exc)
            return RemotingCommand.response(ResponseCode.NO_PERMISSION, f"{ACL_EXCEPTION}: {exc}")
        return None

    def _connection_closed(self, conn: Connection) -> None:
        broker_addr = self.route.on_channel_destroy(conn)
        if broker_addr is not None:
            log.info("broker %s removed: its connection closed (%s)", broker_addr, conn.close_reason)
