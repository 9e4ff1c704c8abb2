"""The NameServer's request processors (RocketMQ 4.9.7's DefaultRequestProcessor), one per code.

Each takes (connection, request) and returns the response. A missing required header field is answered
SYSTEM_ERROR "the custom field <name> is null", as RocketMQ does. The connection a broker registers
over is its "channel": when it closes, the broker is forgotten.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Mapping

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import OrbitError
from orbitmq.message.hashing import crc32
from orbitmq.message.validation import topic_problem
from orbitmq.namesrv import wire
from orbitmq.namesrv.config import CONFIG_BLACK_LIST, NamesrvConfig, encode_properties_text
from orbitmq.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from orbitmq.namesrv.route_table import DataVersion, RouteInfoManager
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.java_values import parse_boolean, parse_int, parse_long
from orbitmq.protocol.properties_text import decode_properties_text
from orbitmq.transport import Connection, Processor

log = logging.getLogger("orbitmq.namesrv")

# REGISTER_BROKER bodies larger than this (or compressed) are decoded on a worker thread. One thread for
# the process: one decode at a time, and one malloc arena for its large buffers.
INLINE_DECODE_MAX = 256 * 1024
_DECODE_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="namesrv-decode")

# GET_ROUTEINFO_BY_TOPIC answers standard JSON from this requester version (V4_9_4) on.
STANDARD_JSON_VERSION = 401

NO_ROUTE_REMARK = (
    "No topic route info in name server for the topic: {topic}\n"
    "See http://rocketmq.apache.org/docs/faq/ for further details."
)


class HeaderFieldError(OrbitError):
    """A required custom header field is missing or malformed."""


def _required(ext: Mapping[str, str], name: str) -> str:
    value = ext.get(name)
    if value is None:
        raise HeaderFieldError(f"the custom field {name} is null")
    return value


def _required_int(ext: Mapping[str, str], name: str) -> int:
    value = _required(ext, name)
    try:
        return parse_long(value)
    except ValueError:
        raise HeaderFieldError(f"the custom field {name} is not a number: {value!r}") from None


def _optional_int(ext: Mapping[str, str], name: str, default: int) -> int:
    value = ext.get(name)
    if value is None:
        return default
    try:
        return parse_int(value)
    except ValueError:
        raise HeaderFieldError(f"the custom field {name} is not a number: {value!r}") from None


def _flag(ext: Mapping[str, str], name: str) -> bool:
    return parse_boolean(ext.get(name))


def _ok(ext_fields: Mapping[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.response(ResponseCode.SUCCESS, ext_fields=ext_fields, body=body)


class NamesrvProcessors:
    def __init__(
        self,
        route: RouteInfoManager,
        kv: KVConfigManager,
        config: NamesrvConfig,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.route = route
        self.kv = kv
        self.config = config
        self.clock = clock
        self._illegal_logged: dict[str, frozenset[str]] = {}

    def table(self) -> dict[int, Processor]:
        return {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_namesrv_config,
        }

    # ---- KV config --------------------------------------------------------------------------

    async def put_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        ext = req.ext_fields
        self.kv.put(_required(ext, "namespace"), _required(ext, "key"), _required(ext, "value"))
        return _ok()

    async def get_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        namespace, key = _required(req.ext_fields, "namespace"), _required(req.ext_fields, "key")
        value = self.kv.get(namespace, key)
        if value is None:
            return RemotingCommand.response(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {namespace} Key: {key}"
            )
        return _ok({"value": value})

    async def delete_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        self.kv.delete(_required(req.ext_fields, "namespace"), _required(req.ext_fields, "key"))
        return _ok()

    async def get_kv_list_by_namespace(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        namespace = _required(req.ext_fields, "namespace")
        table = self.kv.namespace(namespace)
        if table is None:
            return RemotingCommand.response(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {namespace}"
            )
        return _ok(body=wire.encode_kv_table(table))

    # ---- brokers ----------------------------------------------------------------------------

    async def register_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        ext = req.ext_fields
        broker_name = _required(ext, "brokerName")
        broker_addr = _required(ext, "brokerAddr")
        cluster_name = _required(ext, "clusterName")
        ha_server_addr = _required(ext, "haServerAddr")
        broker_id = _required_int(ext, "brokerId")
        body = req.body
        expected_crc = _optional_int(ext, "bodyCrc32", 0)
        if expected_crc != 0 and crc32(body) != expected_crc:
            log.warning("register from %s: body crc32 does not match %d", conn.remote_address, expected_crc)
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        compressed = _flag(ext, "compressed")
        max_inflated = self.config.register_broker_max_inflated_size
        if compressed or len(body) > INLINE_DECODE_MAX:
            # Inflating (up to registerBrokerMaxInflatedSize) takes a while: on the decode thread, so
            # route queries keep being answered meanwhile (zlib releases the GIL).
            decode = functools.partial(
                wire.decode_registration, bytes(body), compressed=compressed, max_inflated=max_inflated
            )
            registration = await asyncio.get_running_loop().run_in_executor(_DECODE_THREAD, decode)
        else:
            registration = wire.decode_registration(body, compressed=False)
        illegal = [t for t in registration.topic_configs if topic_problem(t) is not None]
        for topic in illegal:  # names are checked wherever they enter; a route table is no exception
            del registration.topic_configs[topic]
        # Brokers re-register every 30 s and on each topic change: say it once per broker and name set.
        if illegal and self._illegal_logged.get(broker_addr) != frozenset(illegal):
            if len(self._illegal_logged) >= 1024:
                self._illegal_logged.clear()
            self._illegal_logged[broker_addr] = frozenset(illegal)
            log.warning(
                "register from %s (%s): %d illegal topic name(s) ignored, e.g. %r",
                conn.remote_address,
                broker_addr,
                len(illegal),
                illegal[0][:64],
            )
        result = self.route.register_broker(
            cluster_name=cluster_name,
            broker_addr=broker_addr,
            broker_name=broker_name,
            broker_id=broker_id,
            ha_server_addr=ha_server_addr,
            data_version=registration.data_version,
            topic_configs=registration.topic_configs,
            filter_servers=registration.filter_servers,
            channel=conn,
        )
        reply: dict[str, str] = {}
        if result.ha_server_addr is not None:
            reply["haServerAddr"] = result.ha_server_addr
        if result.master_addr is not None:
            reply["masterAddr"] = result.master_addr
        order_conf = self.kv.namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return _ok(reply, wire.encode_kv_table(order_conf) if order_conf else b"")

    async def unregister_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        ext = req.ext_fields
        self.route.unregister_broker(
            cluster_name=_required(ext, "clusterName"),
            broker_addr=_required(ext, "brokerAddr"),
            broker_name=_required(ext, "brokerName"),
            broker_id=_required_int(ext, "brokerId"),
        )
        return _ok()

    async def query_data_version(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        ext = req.ext_fields
        broker_addr = _required(ext, "brokerAddr")
        _required(ext, "brokerName")
        _required(ext, "clusterName")
        _required_int(ext, "brokerId")
        version = wire.decode_data_version_json(req.body) if req.body else DataVersion()
        changed = self.route.is_broker_topic_config_changed(broker_addr, version)
        if not changed:
            self.route.touch_broker(broker_addr)
        stored = self.route.query_broker_data_version(broker_addr)
        body = wire.encode_data_version(stored) if stored is not None else b""
        return _ok({"changed": "true" if changed else "false"}, body)

    # ---- routes -----------------------------------------------------------------------------

    async def get_route_info_by_topic(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        topic = _required(req.ext_fields, "topic")
        route = self.route.get_topic_route(topic)
        if route is None:
            return RemotingCommand.response(ResponseCode.TOPIC_NOT_EXIST, NO_ROUTE_REMARK.format(topic=topic))
        if self.config.order_message_enable:
            route.order_topic_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
        standard = req.version >= STANDARD_JSON_VERSION or _flag(req.ext_fields, "acceptStandardJsonOnly")
        return _ok(body=wire.encode_topic_route(route, standard=standard))

    async def get_broker_cluster_info(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        brokers, clusters = self.route.cluster_info()
        return _ok(body=wire.encode_cluster_info(brokers, clusters))

    async def wipe_write_perm_of_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        count = self.route.wipe_write_perm(_required(req.ext_fields, "brokerName"))
        return _ok({"wipeTopicCount": str(count)})

    async def add_write_perm_of_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        count = self.route.add_write_perm(_required(req.ext_fields, "brokerName"))
        return _ok({"addTopicCount": str(count)})

    async def get_all_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return _ok(body=wire.encode_topic_list(self.route.all_topics()))

    async def delete_topic_in_namesrv(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        self.route.delete_topic(_required(req.ext_fields, "topic"), req.ext_fields.get("clusterName") or None)
        return _ok()

    async def get_topics_by_cluster(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return _ok(
            body=wire.encode_topic_list(self.route.topics_by_cluster(_required(req.ext_fields, "cluster")))
        )

    async def get_system_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        topics, broker_addr = self.route.system_topics()
        return _ok(body=wire.encode_topic_list(topics, broker_addr))

    async def get_unit_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return _ok(body=wire.encode_topic_list(self.route.unit_topics(unit=True, unit_sub=None)))

    async def get_has_unit_sub_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return _ok(body=wire.encode_topic_list(self.route.unit_topics(unit=None, unit_sub=True)))

    async def get_has_unit_sub_ununit_topic_list(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        return _ok(body=wire.encode_topic_list(self.route.unit_topics(unit=False, unit_sub=True)))

    # ---- configuration ----------------------------------------------------------------------

    async def get_namesrv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return _ok(body=encode_properties_text(self.config.to_properties()).encode())

    async def update_namesrv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        try:
            props = decode_properties_text(bytes(req.body).decode("utf-8"))
        except UnicodeDecodeError:
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        refused = sorted(CONFIG_BLACK_LIST & props.keys())
        if refused:
            return RemotingCommand.response(
                ResponseCode.NO_PERMISSION, f"Can not update config in black list: {', '.join(refused)}"
            )
        try:
            self.config.update(props)
        except ValueError as exc:
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, str(exc))
        self._persist_config()
        return _ok()

    def _persist_config(self) -> None:
        from pathlib import Path

        path = Path(self.config.config_store_path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(encode_properties_text(self.config.to_properties()), encoding="utf-8")
        except OSError as exc:
            log.warning("cannot persist namesrv config to %s: %s", path, exc)
