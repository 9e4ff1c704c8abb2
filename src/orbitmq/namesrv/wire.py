"""The NameServer's JSON bodies: route data and cluster info out, broker registrations in.

Out (fact sheet 4.2, 4.6): fastjson's default style (numeric map keys unquoted) for requesters before
4.9.4 and for cluster info, else standard JSON (keys quoted and sorted, non-ASCII escaped). In (4.4):
RegisterBrokerBody as JSON, zlib-compressed, or a legacy bare TopicConfigSerializeWrapper, read leniently.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message.compression import InflateLimitError, inflate_bounded
from orbitmq.namesrv.route_table import BrokerData, DataVersion, TopicConfigEntry, TopicRoute
from orbitmq.protocol import java_json
from orbitmq.protocol.bodies_core import split_compressed_registration

# ---------------------------------------------------------------------------------------- writing


def _write(value: Any, out: list[str], standard: bool) -> None:
    if isinstance(value, dict):
        items = list(value.items())
        if standard:
            items.sort(key=lambda kv: (isinstance(kv[0], str), kv[0]))
        out.append("{")
        for i, (key, item) in enumerate(items):
            if i:
                out.append(",")
            if isinstance(key, str):
                out.append(_string(key, standard))
            elif standard:
                out.append(f'"{int(key)}"')
            else:
                out.append(str(int(key)))
            out.append(":")
            _write(item, out, standard)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, standard)
        out.append("]")
    elif isinstance(value, str):
        out.append(_string(value, standard))
    else:
        out.append(orjson.dumps(value).decode())


def _string(text: str, standard: bool) -> str:
    if standard and not text.isascii():
        return json.dumps(text)  # ensure_ascii: \uXXXX as BrowserCompatible writes
    return orjson.dumps(text).decode()


def fastjson_dumps(value: Any, *, standard: bool) -> bytes:
    out: list[str] = []
    _write(value, out, standard)
    return "".join(out).encode()


def _broker_data(data: BrokerData) -> dict[str, Any]:
    return {"brokerAddrs": dict(data.broker_addrs), "brokerName": data.broker_name, "cluster": data.cluster}


def encode_topic_route(route: TopicRoute, *, standard: bool) -> bytes:
    body: dict[str, Any] = {
        "brokerDatas": [_broker_data(b) for b in route.broker_datas],
        "filterServerTable": {addr: list(servers) for addr, servers in route.filter_server_table.items()},
    }
    if route.order_topic_conf is not None:
        body["orderTopicConf"] = route.order_topic_conf
    body["queueDatas"] = [
        {
            "brokerName": q.broker_name,
            "perm": q.perm,
            "readQueueNums": q.read_queue_nums,
            "topicSysFlag": q.topic_sys_flag,
            "writeQueueNums": q.write_queue_nums,
        }
        for q in route.queue_datas
    ]
    return fastjson_dumps(body, standard=standard)


def encode_cluster_info(brokers: Mapping[str, BrokerData], clusters: Mapping[str, list[str]]) -> bytes:
    body = {
        "brokerAddrTable": {name: _broker_data(data) for name, data in brokers.items()},
        "clusterAddrTable": {cluster: list(names) for cluster, names in clusters.items()},
    }
    return fastjson_dumps(body, standard=False)


def encode_data_version(version: DataVersion) -> bytes:
    return orjson.dumps({"counter": version.counter, "timestamp": version.timestamp})


def encode_kv_table(table: Mapping[str, str]) -> bytes:
    return orjson.dumps({"table": dict(table)})


def encode_topic_list(topics: list[str], broker_addr: str | None = None) -> bytes:
    body: dict[str, Any] = {}
    if broker_addr is not None:
        body["brokerAddr"] = broker_addr
    body["topicList"] = topics
    return orjson.dumps(body)


# ---------------------------------------------------------------------------------------- reading


@dataclass(slots=True)
class Registration:
    data_version: DataVersion
    topic_configs: dict[str, TopicConfigEntry]
    filter_servers: list[str]


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or value is None:
        raise RemoteProtocolError(f"{name} is not a number: {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise RemoteProtocolError(f"{name} is not a number: {value!r}") from None


def decode_data_version(obj: Any) -> DataVersion:
    if not isinstance(obj, Mapping):
        return DataVersion()
    return DataVersion(_int(obj.get("timestamp", 0), "timestamp"), _int(obj.get("counter", 0), "counter"))


def decode_data_version_json(data: bytes | bytearray | memoryview) -> DataVersion:
    try:
        return decode_data_version(_loads(data))
    except ValueError as exc:
        raise RemoteProtocolError(f"bad DataVersion body: {exc}") from None


def _topic_config(name: str, obj: Any) -> TopicConfigEntry:
    if not isinstance(obj, Mapping):
        raise RemoteProtocolError(f"topic config of {name!r} is not an object")
    return TopicConfigEntry(
        topic_name=str(obj.get("topicName") or name),
        read_queue_nums=_int(obj.get("readQueueNums", 16), "readQueueNums"),
        write_queue_nums=_int(obj.get("writeQueueNums", 16), "writeQueueNums"),
        perm=_int(obj.get("perm", 6), "perm"),
        topic_sys_flag=_int(obj.get("topicSysFlag", 0), "topicSysFlag"),
    )


def _wrapper(obj: Any) -> tuple[DataVersion, dict[str, TopicConfigEntry]]:
    if not isinstance(obj, Mapping):
        return DataVersion(), {}
    table = obj.get("topicConfigTable") or {}
    if not isinstance(table, Mapping):
        raise RemoteProtocolError("topicConfigTable is not an object")
    configs = {str(name): _topic_config(str(name), cfg) for name, cfg in table.items()}
    return decode_data_version(obj.get("dataVersion")), configs


DEFAULT_MAX_INFLATED_SIZE = 32 * 1024 * 1024


def decode_registration(
    body: bytes | bytearray | memoryview,
    *,
    compressed: bool,
    max_inflated: int = DEFAULT_MAX_INFLATED_SIZE,
) -> Registration:
    """A REGISTER_BROKER body in any of its forms; RemoteProtocolError when it cannot be read or the
    compressed form inflates past `max_inflated` bytes (registerBrokerMaxInflatedSize)."""
    if not body:
        return Registration(DataVersion(), {}, [])
    if compressed:
        return _decode_compressed(bytes(body), max_inflated)
    try:
        obj = _loads(body)
    except ValueError as exc:
        raise RemoteProtocolError(f"bad RegisterBrokerBody JSON: {exc}") from None
    if not isinstance(obj, Mapping):
        raise RemoteProtocolError("RegisterBrokerBody is not a JSON object")
    if "topicConfigSerializeWrapper" in obj or "filterServerList" in obj:
        version, configs = _wrapper(obj.get("topicConfigSerializeWrapper"))
        servers = obj.get("filterServerList") or []
        return Registration(version, configs, [str(s) for s in servers])
    version, configs = _wrapper(obj)  # legacy broker: the wrapper itself
    return Registration(version, configs, [])


_INT = struct.Struct(">i")

# The lenient (fastjson-compatible) reader is pure Python, about 0.5 s per MB: standard JSON goes
# through orjson, and only data of a plausible size falls back to it.
MAX_LENIENT_SIZE = 1024 * 1024


def _loads(data: bytes | bytearray | memoryview) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if len(data) > MAX_LENIENT_SIZE:
            raise ValueError(f"not standard JSON ({exc}) and too large for the lenient reader") from None
    return java_json.loads(data)


def _decode_compressed(body: bytes, max_inflated: int) -> Registration:
    try:
        data = inflate_bounded(body, max_inflated)
    except InflateLimitError as exc:
        raise RemoteProtocolError(f"compressed RegisterBrokerBody {exc}") from None
    except zlib.error as exc:
        raise RemoteProtocolError(f"compressed RegisterBrokerBody does not inflate: {exc}") from None
    version_json, topic_texts, servers_json = split_compressed_registration(data)
    try:
        version = decode_data_version(_loads(version_json))
        configs: dict[str, TopicConfigEntry] = {}
        for text in topic_texts:
            tokens = text.decode().split(" ")
            if len(tokens) != 5:
                raise RemoteProtocolError(f"bad topic config text {' '.join(tokens)!r}")
            name = tokens[0]
            configs[name] = TopicConfigEntry(name, int(tokens[1]), int(tokens[2]), int(tokens[3]))
        servers: list[str] = []
        if servers_json is not None:
            servers = [str(s) for s in _loads(servers_json) or []]
    except (ValueError, UnicodeDecodeError) as exc:
        raise RemoteProtocolError(f"bad compressed RegisterBrokerBody: {exc}") from None
    return Registration(version, configs, servers)


def encode_registration(
    data_version: DataVersion,
    topic_configs: Mapping[str, TopicConfigEntry],
    filter_servers: list[str] | None = None,
    *,
    compressed: bool = False,
) -> bytes:
    """A REGISTER_BROKER body as a 4.9.7 broker sends it (tests and tools use this)."""
    version_json = encode_data_version(data_version)
    if compressed:
        parts = [_INT.pack(len(version_json)), version_json, _INT.pack(len(topic_configs))]
        for cfg in topic_configs.values():
            text = (
                f"{cfg.topic_name} {cfg.read_queue_nums} {cfg.write_queue_nums} {cfg.perm} SINGLE_TAG"
            ).encode()
            parts += [_INT.pack(len(text)), text]
        servers = orjson.dumps(list(filter_servers or []))
        parts += [_INT.pack(len(servers)), servers]
        return zlib.compress(b"".join(parts), 9)
    table = {
        name: {
            "order": False,
            "perm": cfg.perm,
            "readQueueNums": cfg.read_queue_nums,
            "topicFilterType": "SINGLE_TAG",
            "topicName": cfg.topic_name,
            "topicSysFlag": cfg.topic_sys_flag,
            "writeQueueNums": cfg.write_queue_nums,
        }
        for name, cfg in topic_configs.items()
    }
    return orjson.dumps(
        {
            "filterServerList": list(filter_servers or []),
            "topicConfigSerializeWrapper": {
                "dataVersion": {"counter": data_version.counter, "timestamp": data_version.timestamp},
                "topicConfigTable": table,
            },
        }
    )
