"""JSON bodies for administration and broker bookkeeping (fact sheet 4.7, 4.9, 4.10): subscription
groups, offset tables (consumerOffset.json, delayOffset.json), topic/consume statistics, connections,
offset resets. MessageQueue-keyed maps are written with object keys, as fastjson does; int-keyed maps
with string keys in `to_json()` and unquoted in `to_json_pretty()` (RocketMQ's config files).
Import these from `orbitmq.protocol.bodies`. Knows nothing about how the broker keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from orbitmq.message.model import MessageQueue
from orbitmq.protocol.bodies_client import SubscriptionData
from orbitmq.protocol.bodies_core import DataVersion
from orbitmq.protocol.body_fields import (
    BodyError,
    JsonBody,
    as_obj,
    compact,
    get_bool,
    get_float,
    get_int,
    get_list,
    get_map,
    get_str,
    int_item,
    int_key,
    mq_from_key,
    mq_key,
    str_item,
)

# ------------------------------------------------------------------ subscription groups


@dataclass(slots=True)
class SubscriptionGroupConfig(JsonBody):
    """A consumer group's settings (subscriptionGroup.json, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    def to_obj(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        name = get_str(obj, "groupName", "")
        if not name:
            raise BodyError("groupName is missing")
        return cls(
            name,
            get_bool(obj, "consumeEnable", True),
            get_bool(obj, "consumeFromMinEnable", True),
            get_bool(obj, "consumeBroadcastEnable", True),
            get_int(obj, "retryQueueNums", 1),
            get_int(obj, "retryMaxTimes", 16),
            get_int(obj, "brokerId", 0),
            get_int(obj, "whichBrokerWhenConsumeSlowly", 1),
            get_bool(obj, "notifyConsumerIdsChangedEnable", True),
        )


@dataclass(slots=True)
class SubscriptionGroupWrapper(JsonBody):
    """subscriptionGroup.json and the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    def to_obj(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_obj(),
            "subscriptionGroupTable": {k: v.to_obj() for k, v in self.subscription_group_table.items()},
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_map(obj, "subscriptionGroupTable", str_item, SubscriptionGroupConfig.from_any),
            DataVersion.from_any(obj.get("dataVersion") or {}),
        )


# ------------------------------------------------------------------ offset tables (config files)


def _int_map(value: Any) -> dict[int, int]:
    return {int_key(k): int_item(v) for k, v in as_obj(value, "offset map").items()}


@dataclass(slots=True)
class ConsumerOffsetWrapper(JsonBody):
    """consumerOffset.json and the GET_ALL_CONSUMER_OFFSET body: "topic@group" -> {queueId: offset}."""

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        return {"offsetTable": {k: dict(v) for k, v in self.offset_table.items()}}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_map(obj, "offsetTable", str_item, _int_map))


@dataclass(slots=True)
class DelayOffsetWrapper(JsonBody):
    """delayOffset.json and the GET_ALL_DELAY_OFFSET body: delay level -> consumed offset."""

    offset_table: dict[int, int] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        return {"offsetTable": dict(self.offset_table)}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_map(obj, "offsetTable", int_key, int_item))


# ------------------------------------------------------------------ statistics


@dataclass(slots=True)
class TopicOffset(JsonBody):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_obj(self) -> dict[str, Any]:
        return {
            "lastUpdateTimestamp": self.last_update_timestamp,
            "maxOffset": self.max_offset,
            "minOffset": self.min_offset,
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_int(obj, "minOffset"), get_int(obj, "maxOffset"), get_int(obj, "lastUpdateTimestamp"))


@dataclass(slots=True)
class TopicStatsTable(JsonBody):
    """GET_TOPIC_STATS_INFO body."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        return {"offsetTable": {mq_key(mq): v.to_obj() for mq, v in self.offset_table.items()}}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_map(obj, "offsetTable", mq_from_key, TopicOffset.from_any))


@dataclass(slots=True)
class OffsetWrapper(JsonBody):
    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0

    def to_obj(self) -> dict[str, Any]:
        return {
            "brokerOffset": self.broker_offset,
            "consumerOffset": self.consumer_offset,
            "lastTimestamp": self.last_timestamp,
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_int(obj, "brokerOffset"), get_int(obj, "consumerOffset"), get_int(obj, "lastTimestamp")
        )


@dataclass(slots=True)
class ConsumeStats(JsonBody):
    """GET_CONSUME_STATS body."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def to_obj(self) -> dict[str, Any]:
        return {
            "consumeTps": float(self.consume_tps),
            "offsetTable": {mq_key(mq): v.to_obj() for mq, v in self.offset_table.items()},
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_map(obj, "offsetTable", mq_from_key, OffsetWrapper.from_any), get_float(obj, "consumeTps")
        )

    @property
    def diff_total(self) -> int:
        """Messages not yet consumed, summed over queues (ConsumeStats.computeTotalDiff)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())


# ------------------------------------------------------------------ connections


@dataclass(slots=True)
class Connection(JsonBody):
    client_id: str
    client_addr: str
    language: str = "JAVA"  # LanguageCode name
    version: int = 0

    def to_obj(self) -> dict[str, Any]:
        return {
            "clientAddr": self.client_addr,
            "clientId": self.client_id,
            "language": self.language,
            "version": self.version,
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_str(obj, "clientId", ""),
            get_str(obj, "clientAddr", ""),
            get_str(obj, "language", "JAVA"),
            get_int(obj, "version"),
        )


@dataclass(slots=True)
class ConsumerConnection(JsonBody):
    """GET_CONSUMER_CONNECTION_LIST body."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def to_obj(self) -> dict[str, Any]:
        return compact(
            {
                "connectionSet": [c.to_obj() for c in self.connection_set],
                "consumeFromWhere": _name(self.consume_from_where),
                "consumeType": _name(self.consume_type),
                "messageModel": _name(self.message_model),
                "subscriptionTable": {k: v.to_obj() for k, v in self.subscription_table.items()},
            }
        )

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_list(obj, "connectionSet", Connection.from_any),
            get_map(obj, "subscriptionTable", str_item, SubscriptionData.from_any),
            get_str(obj, "consumeType"),
            get_str(obj, "messageModel"),
            get_str(obj, "consumeFromWhere"),
        )


def _name(value: str | None) -> str | None:
    return None if value is None else str(value)


@dataclass(slots=True)
class ProducerConnection(JsonBody):
    """GET_PRODUCER_CONNECTION_LIST body."""

    connection_set: list[Connection] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        return {"connectionSet": [c.to_obj() for c in self.connection_set]}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_list(obj, "connectionSet", Connection.from_any))


# ------------------------------------------------------------------ offset resets and consumer status


@dataclass(slots=True)
class ResetOffsetBody(JsonBody):
    """RESET_CONSUMER_CLIENT_OFFSET / INVOKE_BROKER_TO_RESET_OFFSET body (also the client's offsets.json)."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        return {"offsetTable": {mq_key(mq): v for mq, v in self.offset_table.items()}}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_map(obj, "offsetTable", mq_from_key, int_item))


def _mq_offsets(value: Any) -> dict[MessageQueue, int]:
    return {mq_from_key(k): int_item(v) for k, v in as_obj(value, "offset table").items()}


@dataclass(slots=True)
class GetConsumerStatusBody(JsonBody):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS / GET_CONSUMER_STATUS_FROM_CLIENT body."""

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        return {
            "consumerTable": {
                client: {mq_key(mq): v for mq, v in table.items()}
                for client, table in self.consumer_table.items()
            },
            "messageQueueTable": {mq_key(mq): v for mq, v in self.message_queue_table.items()},
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_map(obj, "messageQueueTable", mq_from_key, int_item),
            get_map(obj, "consumerTable", str_item, _mq_offsets),
        )


__all__ = [
    "BodyError",
    "Connection",
    "ConsumeStats",
    "ConsumerConnection",
    "ConsumerOffsetWrapper",
    "DelayOffsetWrapper",
    "GetConsumerStatusBody",
    "OffsetWrapper",
    "ProducerConnection",
    "ResetOffsetBody",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicOffset",
    "TopicStatsTable",
]
