"""RegistrationService: REGISTER_BROKER to every nameserver at start, every 30 s (every topic), and on
topic creation (that topic only, as RocketMQ's registerIncrementBrokerData).

At shutdown UNREGISTER_BROKER tells the nameservers at once (they would expire us after 120 s).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from orbitmq.message.hashing import crc32
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.broker.topics import TopicConfig

log = logging.getLogger("orbitmq.broker")


# seconds between registrations of a slave that does not know its master yet
SLAVE_WITHOUT_MASTER_RETRY = 1.0


class RegistrationService:
    """The body is RegisterBrokerBody in its plain JSON form: the topic table wrapped with the DataVersion
    (`{"filterServerList":[],"topicConfigSerializeWrapper":{...}}`), with `bodyCrc32` so the nameserver
    can check it. A broker without R+W permission registers every topic with its own permission, as
    RocketMQ does.
    """

    def __init__(self, app: BrokerContext) -> None:
        self.app = app
        self.last_success: dict[str, int] = {}  # namesrv address -> ms of last successful registration

    def _body(self, topics: Iterable[TopicConfig] | None = None) -> bytes:
        app = self.app
        wrapper: dict[str, Any] = app.topics.wrapper_dict(topics)
        perm = app.config.broker_permission
        if perm & 6 != 6:
            for tc in wrapper["topicConfigTable"].values():
                tc["perm"] = perm
        return orjson.dumps({"filterServerList": [], "topicConfigSerializeWrapper": wrapper})

    def _header(self, body: bytes) -> dict[str, str]:
        c = self.app.config
        return {
            "brokerName": c.broker_name,
            "brokerAddr": self.app.broker_addr,
            "clusterName": c.broker_cluster_name,
            "haServerAddr": self.app.ha_server_addr,
            "brokerId": str(c.broker_id),
            "compressed": "false",
            "bodyCrc32": str(crc32(body)),
        }

    async def register_all(self, *, timeout: float | None = None) -> int:
        """Register with every nameserver concurrently; returns how many accepted."""
        return await self._register(None, timeout)

    async def register_topics(self, topics: Iterable[TopicConfig], *, timeout: float | None = None) -> int:
        """Register only `topics` (created or changed), with the current data version, as RocketMQ's
        registerIncrementBrokerData does: a nameserver adds or updates the topics a registration
        carries and keeps the others, so creating topic N costs one topic's body, not N (the periodic
        registration still sends them all)."""
        return await self._register(list(topics), timeout)

    async def _register(self, topics: list[TopicConfig] | None, timeout: float | None) -> int:
        addresses = self.app.config.namesrv_addresses
        if not addresses:
            return 0
        body = self._body(topics)
        header = self._header(body)
        wait = timeout if timeout is not None else self.app.config.register_broker_timeout_mills / 1000
        results = await asyncio.gather(
            *(self._register_one(addr, header, body, wait) for addr in addresses), return_exceptions=True
        )
        return sum(1 for r in results if r is True)

    async def _register_one(self, addr: str, header: dict[str, str], body: bytes, timeout: float) -> bool:
        request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)
        try:
            response = await self.app.outbound.invoke(addr, request, timeout)
        except Exception as exc:
            log.warning("register broker to namesrv %s failed: %s", addr, exc)
            return False
        if response.code != ResponseCode.SUCCESS:
            log.warning("namesrv %s refused registration: %s %s", addr, response.code, response.remark)
            return False
        self.last_success[addr] = self.app.clock.now_ms()
        self.app.replication.on_registered(response)
        return True

    async def unregister_all(self) -> None:
        c = self.app.config
        header = {
            "brokerName": c.broker_name,
            "brokerAddr": self.app.broker_addr,
            "clusterName": c.broker_cluster_name,
            "brokerId": str(c.broker_id),
        }

        async def one(addr: str) -> None:
            try:
                await self.app.outbound.invoke(
                    addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header), 2.0
                )
            except Exception as exc:
                log.info("unregister broker from namesrv %s failed: %s", addr, exc)

        await asyncio.gather(*(one(a) for a in c.namesrv_addresses))

    async def run(self) -> None:
        period = min(max(self.app.config.register_name_server_period, 10000), 60000) / 1000
        while True:
            # A slave that registered before its master learns the master's HA address only from a later
            # registration: it asks again every second until it knows, not after a whole period.
            waiting_for_master = self.app.replication.awaiting_master
            await asyncio.sleep(SLAVE_WITHOUT_MASTER_RETRY if waiting_for_master else period)
            await self.register_all()
