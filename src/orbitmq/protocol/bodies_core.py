"""JSON bodies of the remoting protocol (fact sheet section 4), as dataclasses: the core set.

Every body has `to_json() -> bytes` and `from_json(data) -> Self` (raises `BodyError`). Writing gives
standard JSON with fastjson's conventions (bean properties alphabetical, nulls omitted, int map keys as
strings, MessageQueue keys as objects); reading accepts what Java writes (see `java_json`). Config-file
wrappers also have `to_json_pretty()` (store/config/*.json style). `MessageQueue` is
`orbitmq.message.model.MessageQueue`.

This module: route, cluster, topic-config and registration bodies. Import
bodies from `orbitmq.protocol.bodies`, which re-exports every bodies_* module. Knows nothing
about how a broker or namesrv uses them.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Self

from orbitmq.protocol import java_json
from orbitmq.protocol.body_fields import (
    BodyError,
    JsonBody,
    compact,
    get_bool,
    get_int,
    get_list,
    get_map,
    get_str,
    int_key,
    str_item,
)
from orbitmq.protocol.perm import PERM_READ_WRITE

Buffer = java_json.Buffer

MASTER_ID: Final = 0  # the broker id of a master


# ------------------------------------------------------------------ enums written by name


class TopicFilterType(StrEnum):
    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


# ------------------------------------------------------------------ route (4.2)


@dataclass(slots=True)
class QueueData(JsonBody):
    broker_name: str
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = PERM_READ_WRITE
    topic_sys_flag: int = 0

    def to_obj(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_str(obj, "brokerName", ""),
            get_int(obj, "readQueueNums"),
            get_int(obj, "writeQueueNums"),
            get_int(obj, "perm"),
            get_int(obj, "topicSysFlag"),
        )


@dataclass(slots=True)
class BrokerData(JsonBody):
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)  # broker id (0 = master) -> "ip:port"

    def to_obj(self) -> dict[str, Any]:
        # sorted by id, as the namesrv's standard-JSON encoding (MapSortField) does
        return {
            "brokerAddrs": dict(sorted(self.broker_addrs.items())),
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_str(obj, "cluster", ""),
            get_str(obj, "brokerName", ""),
            get_map(obj, "brokerAddrs", int_key, str_item),
        )

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)


@dataclass(slots=True)
class TopicRouteData(JsonBody):
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None  # "brokerName1:queueNum1;brokerName2:queueNum2"

    def to_obj(self) -> dict[str, Any]:
        return compact(
            {
                "brokerDatas": [b.to_obj() for b in self.broker_datas],
                "filterServerTable": {k: list(v) for k, v in self.filter_server_table.items()},
                "orderTopicConf": self.order_topic_conf,
                "queueDatas": [q.to_obj() for q in self.queue_datas],
            }
        )

    def to_json(self, *, standard: bool = True) -> bytes:
        """`standard=False` writes broker ids unquoted (`{0:"addr"}`), as a 4.9.7 namesrv answers
        requests with version < 401 that did not ask for standard JSON."""
        return java_json.dumps(self.to_obj(), string_keys=standard)

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_list(obj, "queueDatas", QueueData.from_any),
            get_list(obj, "brokerDatas", BrokerData.from_any),
            get_map(obj, "filterServerTable", str_item, _str_list),
            get_str(obj, "orderTopicConf"),
        )


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        raise BodyError(f"not an array: {value!r:.80}")
    return [str_item(v) for v in value]


@dataclass(slots=True)
class ClusterInfo(JsonBody):
    """GET_BROKER_CLUSTER_INFO body."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)  # broker name -> BrokerData
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)  # cluster -> broker names

    def to_obj(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {k: v.to_obj() for k, v in self.broker_addr_table.items()},
            "clusterAddrTable": {k: list(v) for k, v in self.cluster_addr_table.items()},
        }

    def to_json(self, *, standard: bool = True) -> bytes:
        """`standard=False` writes broker ids unquoted, exactly as a 4.9.7 namesrv does."""
        return java_json.dumps(self.to_obj(), string_keys=standard)

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_map(obj, "brokerAddrTable", str_item, BrokerData.from_any),
            get_map(obj, "clusterAddrTable", str_item, _str_list),
        )


# ------------------------------------------------------------------ topic config and registration (4.4, 4.5)


@dataclass(slots=True)
class DataVersion(JsonBody):
    timestamp: int = 0
    counter: int = 0

    def to_obj(self) -> dict[str, Any]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_int(obj, "timestamp"), get_int(obj, "counter"))

    def next_version(self, now_ms: int) -> DataVersion:
        """The version after a change: counter + 1, timestamp = now (DataVersion.nextVersion)."""
        return DataVersion(now_ms, self.counter + 1)


@dataclass(slots=True)
class TopicConfig(JsonBody):
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PERM_READ_WRITE
    topic_filter_type: str = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    def to_obj(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": str(self.topic_filter_type),
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_str(obj, "topicName", ""),
            get_int(obj, "readQueueNums", 16),
            get_int(obj, "writeQueueNums", 16),
            get_int(obj, "perm", PERM_READ_WRITE),
            get_str(obj, "topicFilterType", TopicFilterType.SINGLE_TAG),
            get_int(obj, "topicSysFlag"),
            get_bool(obj, "order"),
        )

    def encode_text(self) -> str:
        """`topicName readQueueNums writeQueueNums perm topicFilterType` (compressed registration;
        topicSysFlag and order are not carried)."""
        fields = (
            self.topic_name,
            self.read_queue_nums,
            self.write_queue_nums,
            self.perm,
            self.topic_filter_type,
        )
        return " ".join(str(f) for f in fields)

    @classmethod
    def decode_text(cls, text: str) -> TopicConfig:
        parts = text.split(" ")
        if len(parts) != 5:
            raise BodyError(f"topic config text needs 5 fields: {text!r:.80}")
        try:
            return TopicConfig(parts[0], int(parts[1]), int(parts[2]), int(parts[3]), parts[4])
        except ValueError:
            raise BodyError(f"bad number in topic config text {text!r:.80}") from None


@dataclass(slots=True)
class TopicConfigSerializeWrapper(JsonBody):
    """topics.json and the GET_ALL_TOPIC_CONFIG body."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_obj(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_obj(),
            "topicConfigTable": {k: v.to_obj() for k, v in self.topic_config_table.items()},
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_map(obj, "topicConfigTable", str_item, TopicConfig.from_any),
            DataVersion.from_any(obj.get("dataVersion") or {}),
        )


_LEN = struct.Struct(">i")


@dataclass(slots=True)
class RegisterBrokerBody(JsonBody):
    """REGISTER_BROKER body: JSON, or (header compressed=true) the zlib form of fact sheet 4.4."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        return {
            "filterServerList": list(self.filter_server_list),
            "topicConfigSerializeWrapper": self.topic_config_serialize_wrapper.to_obj(),
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            TopicConfigSerializeWrapper.from_any(obj.get("topicConfigSerializeWrapper") or {}),
            get_list(obj, "filterServerList", str_item),
        )

    def encode(self, compressed: bool = False) -> bytes:
        if not compressed:
            return self.to_json()
        wrapper = self.topic_config_serialize_wrapper
        parts: list[bytes] = []
        version = wrapper.data_version.to_json()
        parts += (_LEN.pack(len(version)), version, _LEN.pack(len(wrapper.topic_config_table)))
        for config in wrapper.topic_config_table.values():
            text = config.encode_text().encode()
            parts += (_LEN.pack(len(text)), text)
        servers = java_json.dumps(list(self.filter_server_list))
        parts += (_LEN.pack(len(servers)), servers)
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode(cls, data: Buffer, compressed: bool = False) -> RegisterBrokerBody:
        if not compressed:
            return cls.from_json(data)
        try:
            raw = zlib.decompress(data)
        except zlib.error as exc:
            raise BodyError(f"compressed RegisterBrokerBody: {exc}") from None
        version_json, topic_texts, servers_json = split_compressed_registration(raw)
        if servers_json is None:
            raise BodyError("compressed RegisterBrokerBody is truncated")
        version = DataVersion.from_json(version_json)
        table: dict[str, TopicConfig] = {}
        for piece in topic_texts:
            try:
                text = piece.decode()
            except UnicodeDecodeError:
                raise BodyError("compressed RegisterBrokerBody: topic config is not UTF-8") from None
            config = TopicConfig.decode_text(text)
            table[config.topic_name] = config
        try:
            servers = java_json.loads(servers_json)
        except ValueError as exc:
            raise BodyError(f"compressed RegisterBrokerBody filter servers: {exc}") from None
        if not isinstance(servers, list):
            raise BodyError("compressed RegisterBrokerBody filter servers are not an array")
        return cls(TopicConfigSerializeWrapper(table, version), [str_item(s) for s in servers])


def split_compressed_registration(raw: bytes) -> tuple[bytes, list[bytes], bytes | None]:
    """The parts of an inflated compressed RegisterBrokerBody, each framed by a 4-byte length: the
    data version's JSON, a count and that many topic-config texts, then the filter-server JSON (None
    when the body ends before it, as an older broker's does)."""
    pos = 0
    end = len(raw)

    def length_at() -> int:
        nonlocal pos
        if pos + 4 > end:
            raise BodyError("compressed RegisterBrokerBody is truncated")
        (value,) = _LEN.unpack_from(raw, pos)
        pos += 4
        return int(value)

    def chunk() -> bytes:
        nonlocal pos
        length = length_at()
        if length < 0 or pos + length > end:
            raise BodyError(f"compressed RegisterBrokerBody: bad length {length}")
        pos += length
        return raw[pos - length : pos]

    version = chunk()
    count = length_at()
    if count < 0:
        raise BodyError(f"compressed RegisterBrokerBody: bad topic count {count}")
    texts = [chunk() for _ in range(count)]
    return version, texts, chunk() if pos < end else None
