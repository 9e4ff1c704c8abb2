"""AdminBase: the name-server queries and the resolution of topics, clusters and broker names to
broker addresses that every admin operation stands on.

`AdminError` (an OrbitError) is what the user asked that cannot be (unknown topic, cluster, broker or
group); `BrokerError`, `ConnectError`, `RequestTimeoutError` pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from orbitmq.admin.views import BrokerEntry
from orbitmq.client.api import MQClientAPI
from orbitmq.client.config import parse_namesrv_addrs
from orbitmq.common.errors import BrokerError, ClientError, OrbitError
from orbitmq.protocol.bodies import (
    ClusterInfo,
    TopicList,
    TopicRouteData,
)
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.client import RemotingClient
from orbitmq.transport.signing import request_signer
from orbitmq.transport.tls import TlsClientSettings

TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"  # MixAll.TOOLS_CONSUMER_GROUP
TOOLS_PRODUCER_GROUP = "TOOLS_PRODUCER"
LONG_MAX = 2**63 - 1


class AdminError(OrbitError):
    """What the user asked for does not exist or cannot be done (unknown topic, cluster, group...)."""


def ext_fields(**fields: object) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in fields.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def valid_address(address: str) -> bool:
    host, _, port = address.rpartition(":")
    return bool(host) and port.isdigit() and 0 < int(port) < 65536


class AdminBase:
    """Connections, name-server queries and broker resolution; see AdminClient for the operations.

    Resolution follows mqadmin's DefaultMQAdminExt: topic operations go to the master of every broker in
    the topic's route, cluster operations to every master (or every broker) of the cluster, and a broker
    address given by the caller is used as is.
    """

    def __init__(
        self,
        namesrv_addrs: str | Sequence[str] | None = None,
        *,
        require_namesrv: bool = True,
        timeout: float = 5.0,
        connect_timeout: float = 3.0,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        tls: bool | TlsClientSettings = False,
    ) -> None:
        addrs = parse_namesrv_addrs(namesrv_addrs)
        if not addrs and require_namesrv:
            raise ClientError("no name server address: pass -n host:port (';' separates several)")
        self.namesrv_addrs = addrs
        self.timeout = timeout
        if tls is True:
            tls = TlsClientSettings(enable=True)
        self.remoting = RemotingClient(
            connect_timeout=connect_timeout,
            name="admin",
            rpc_hook=request_signer(access_key, secret_key, security_token),
            ssl_context=tls.context() if tls else None,
        )
        self.api = MQClientAPI(self.remoting, addrs, timeout=timeout)
        # For the short-lived clients some operations start (send_message): they sign and encrypt alike.
        self.security: dict[str, Any] = {
            "access_key": access_key,
            "secret_key": secret_key,
            "security_token": security_token,
            "tls": tls,
        }

    async def close(self) -> None:
        await self.remoting.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ---- plumbing ---------------------------------------------------------------------------

    async def call(
        self,
        addr: str,
        code: int,
        ext: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        ok: Iterable[int] = (ResponseCode.SUCCESS,),
        timeout: float | None = None,
    ) -> RemotingCommand:
        request = RemotingCommand.request(code, ext, body)
        resp = await self.remoting.invoke(addr, request, self.timeout if timeout is None else timeout)
        if resp.code not in set(ok):
            raise BrokerError(resp.code, resp.remark, address=addr)
        return resp

    async def _call_namesrv(self, code: int, ext: Mapping[str, str] | None = None) -> RemotingCommand:
        resp = await self.api.invoke_namesrv(RemotingCommand.request(code, ext))
        if resp.code != ResponseCode.SUCCESS:
            raise BrokerError(resp.code, resp.remark, address="namesrv")
        return resp

    # ---- name server ------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return ClusterInfo.from_json(await self.api.get_broker_cluster_info())

    async def topic_list(self) -> list[str]:
        resp = await self._call_namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(TopicList.from_json(resp.body_bytes()).topic_list) if resp.body_length else []

    async def topics_by_cluster(self, cluster: str) -> list[str]:
        resp = await self._call_namesrv(RequestCode.GET_TOPICS_BY_CLUSTER, ext_fields(cluster=cluster))
        return sorted(TopicList.from_json(resp.body_bytes()).topic_list) if resp.body_length else []

    async def topic_route(self, topic: str) -> TopicRouteData:
        route = await self.api.get_topic_route(topic)
        if route is None:
            raise AdminError(f"topic {topic!r} does not exist (the name server has no route for it)")
        return route

    async def brokers(self, cluster: str | None = None) -> list[BrokerEntry]:
        """Every broker the name server knows (of `cluster`), sorted by cluster, name and id."""
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            known = ", ".join(sorted(info.cluster_addr_table)) or "none"
            raise AdminError(f"cluster {cluster!r} does not exist (known clusters: {known})")
        names = info.cluster_addr_table.get(cluster, []) if cluster is not None else info.broker_addr_table
        out = []
        for name in names:
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            for broker_id, addr in data.broker_addrs.items():
                out.append(BrokerEntry(data.cluster, data.broker_name, broker_id, addr))
        return sorted(out, key=lambda e: (e.cluster, e.broker_name, e.broker_id))

    async def master_brokers(self, cluster: str | None = None) -> list[BrokerEntry]:
        return [b for b in await self.brokers(cluster) if b.is_master]

    async def broker_targets(
        self, broker_addr: str | None, cluster: str | None, *, masters_only: bool = True
    ) -> list[str]:
        """The addresses an operation given `-b` or `-c` goes to (mqadmin: -b wins)."""
        if broker_addr:
            return [broker_addr]
        if not cluster:
            raise ClientError("give a broker address (-b) or a cluster name (-c)")
        entries = await (self.master_brokers(cluster) if masters_only else self.brokers(cluster))
        if not entries:
            raise AdminError(f"cluster {cluster!r} has no {'master ' if masters_only else ''}broker")
        return [e.address for e in entries]

    async def topic_masters(self, topic: str) -> dict[str, str]:
        """broker name -> master address for every broker of the topic's route."""
        route = await self.topic_route(topic)
        masters = {bd.broker_name: bd.master_addr for bd in route.broker_datas}
        found = {name: addr for name, addr in sorted(masters.items()) if addr}
        if not found:
            raise AdminError(f"topic {topic!r} has no master broker online")
        return found

    async def master_of(self, topic: str, broker_name: str) -> str:
        masters = await self.topic_masters(topic)
        addr = masters.get(broker_name)
        if addr is None:
            raise AdminError(
                f"broker {broker_name!r} does not serve topic {topic!r} (brokers: {', '.join(masters)})"
            )
        return addr

    async def _on_every_namesrv(self, code: int, ext: Mapping[str, str]) -> None:
        """Send to every configured name server (each keeps its own table, as mqadmin does); fails
        only if none of them did it."""
        failures: list[OrbitError | OSError] = []
        for addr in self.namesrv_addrs:
            try:
                await self.call(addr, code, ext)
            except (OrbitError, OSError) as exc:
                failures.append(exc)
        if len(failures) == len(self.namesrv_addrs):
            raise failures[0]

    async def delete_topic_in_namesrv(self, topic: str, cluster: str | None = None) -> None:
        await self._on_every_namesrv(
            RequestCode.DELETE_TOPIC_IN_NAMESRV, ext_fields(topic=topic, clusterName=cluster)
        )

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        await self._on_every_namesrv(
            RequestCode.PUT_KV_CONFIG, ext_fields(namespace=namespace, key=key, value=value)
        )

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """The value, or None when the name server has none (QUERY_NOT_FOUND)."""
        resp = await self.api.invoke_namesrv(
            RemotingCommand.request(RequestCode.GET_KV_CONFIG, ext_fields(namespace=namespace, key=key))
        )
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        if resp.code != ResponseCode.SUCCESS:
            raise BrokerError(resp.code, resp.remark, address="namesrv")
        return resp.ext_fields.get("value")
