"""JSON bodies clients exchange with brokers (fact sheet 4.3, 4.7, 4.8): heartbeat and subscriptions,
name lists, queue locks, and the enums written by name. Import bodies from `orbitmq.protocol.bodies`.
Knows nothing about how clients or brokers act on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Self

from orbitmq.message.model import MessageQueue
from orbitmq.protocol.body_fields import (
    JsonBody,
    compact,
    get_bool,
    get_int,
    get_list,
    get_map,
    get_str,
    int_item,
    mq_from_obj,
    mq_to_obj,
    str_item,
)

# ------------------------------------------------------------------ enums written by name


class ConsumeType(StrEnum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"  # pull / lite pull
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"  # push


class MessageModel(StrEnum):
    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(StrEnum):
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = (
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    )
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class ExpressionType(StrEnum):
    TAG = "TAG"
    SQL92 = "SQL92"


# ------------------------------------------------------------------ heartbeat (4.3)


@dataclass(slots=True)
class SubscriptionFields:
    """The fields of a subscription that both the client (client/subscription.py) and the broker
    (broker/client_registry.py) hold, and the JSON object they write for it (SubscriptionData,
    properties in fastjson's alphabetical order)."""

    topic: str
    sub_string: str = "*"
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)  # Java String.hashCode of each tag
    sub_version: int = 0
    expression_type: str = ExpressionType.TAG.value
    class_filter_mode: bool = False

    def to_json_dict(self) -> dict[str, object]:
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": list(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": list(self.tags_set),
            "topic": self.topic,
        }


@dataclass(slots=True)
class SubscriptionData(JsonBody):
    topic: str
    sub_string: str = "*"
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)  # Java String.hashCode of each tag
    sub_version: int = 0
    expression_type: str | None = ExpressionType.TAG
    class_filter_mode: bool = False

    def to_obj(self) -> dict[str, Any]:
        return compact(
            {
                "classFilterMode": self.class_filter_mode,
                "codeSet": list(self.code_set),
                "expressionType": None if self.expression_type is None else str(self.expression_type),
                "subString": self.sub_string,
                "subVersion": self.sub_version,
                "tagsSet": list(self.tags_set),
                "topic": self.topic,
            }
        )

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_str(obj, "topic", ""),
            get_str(obj, "subString", "*"),
            get_list(obj, "tagsSet", str_item),
            get_list(obj, "codeSet", int_item),
            get_int(obj, "subVersion"),
            get_str(obj, "expressionType"),
            get_bool(obj, "classFilterMode"),
        )


@dataclass(slots=True)
class ProducerData(JsonBody):
    group_name: str

    def to_obj(self) -> dict[str, Any]:
        return {"groupName": self.group_name}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_str(obj, "groupName", ""))


@dataclass(slots=True)
class ConsumerData(JsonBody):
    group_name: str
    consume_type: str = ConsumeType.CONSUME_PASSIVELY
    message_model: str = MessageModel.CLUSTERING
    consume_from_where: str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_obj(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": str(self.consume_from_where),
            "consumeType": str(self.consume_type),
            "groupName": self.group_name,
            "messageModel": str(self.message_model),
            "subscriptionDataSet": [s.to_obj() for s in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_str(obj, "groupName", ""),
            get_str(obj, "consumeType", ConsumeType.CONSUME_PASSIVELY),
            get_str(obj, "messageModel", MessageModel.CLUSTERING),
            get_str(obj, "consumeFromWhere", ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET),
            get_list(obj, "subscriptionDataSet", SubscriptionData.from_any),
            get_bool(obj, "unitMode"),
        )


@dataclass(slots=True)
class HeartbeatData(JsonBody):
    client_id: str
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        return {
            "clientID": self.client_id,
            "consumerDataSet": [c.to_obj() for c in self.consumer_data_set],
            "producerDataSet": [p.to_obj() for p in self.producer_data_set],
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_str(obj, "clientID", ""),
            get_list(obj, "producerDataSet", ProducerData.from_any),
            get_list(obj, "consumerDataSet", ConsumerData.from_any),
        )


# ------------------------------------------------------------------ small bodies (4.7, 4.8)


@dataclass(slots=True)
class KVTable(JsonBody):
    table: dict[str, str] = field(default_factory=dict)

    def to_obj(self) -> dict[str, Any]:
        return {"table": dict(self.table)}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_map(obj, "table", str_item, str_item))


@dataclass(slots=True)
class TopicList(JsonBody):
    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None

    def to_obj(self) -> dict[str, Any]:
        return compact({"brokerAddr": self.broker_addr, "topicList": list(self.topic_list)})

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_list(obj, "topicList", str_item), get_str(obj, "brokerAddr"))


@dataclass(slots=True)
class GroupList(JsonBody):
    group_list: list[str] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        return {"groupList": list(self.group_list)}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_list(obj, "groupList", str_item))


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody(JsonBody):
    consumer_id_list: list[str] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        return {"consumerIdList": list(self.consumer_id_list)}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_list(obj, "consumerIdList", str_item))


ConsumerIdList = GetConsumerListByGroupResponseBody


@dataclass(slots=True)
class LockBatchRequestBody(JsonBody):
    """LOCK_BATCH_MQ body; UNLOCK_BATCH_MQ uses the same three properties."""

    consumer_group: str
    client_id: str
    mq_set: list[MessageQueue] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        return {
            "clientId": self.client_id,
            "consumerGroup": self.consumer_group,
            "mqSet": [mq_to_obj(mq) for mq in self.mq_set],
        }

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(
            get_str(obj, "consumerGroup", ""),
            get_str(obj, "clientId", ""),
            get_list(obj, "mqSet", mq_from_obj),
        )


@dataclass(slots=True)
class UnlockBatchRequestBody(LockBatchRequestBody):
    pass


@dataclass(slots=True)
class LockBatchResponseBody(JsonBody):
    lock_ok_mq_set: list[MessageQueue] = field(default_factory=list)

    def to_obj(self) -> dict[str, Any]:
        return {"lockOKMQSet": [mq_to_obj(mq) for mq in self.lock_ok_mq_set]}

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        return cls(get_list(obj, "lockOKMQSet", mq_from_obj))
