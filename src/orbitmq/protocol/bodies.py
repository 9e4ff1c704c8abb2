"""All JSON bodies of the remoting protocol (fact sheet section 4): import them from here.

Every body is a dataclass with `to_json() -> bytes` and `from_json(data) -> Self` (raises `BodyError`,
a RemoteProtocolError and ValueError). Writing gives standard JSON with fastjson's conventions (bean
properties alphabetical, nulls omitted, int map keys as strings, MessageQueue map keys as objects);
reading accepts what Java writes (unquoted int keys, object keys; see `java_json`). Config-file
wrappers also have `to_json_pretty()` (fastjson's store/config/*.json style). `to_obj()` /
`from_any(value)` work on already parsed JSON values. Definitions live in `bodies_core`,
`bodies_client`, `bodies_admin` and `properties_text`; this module only gathers them.
"""

from orbitmq.protocol.bodies_admin import (
    Connection,
    ConsumerConnection,
    ConsumerOffsetWrapper,
    ConsumeStats,
    DelayOffsetWrapper,
    GetConsumerStatusBody,
    OffsetWrapper,
    ProducerConnection,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicOffset,
    TopicStatsTable,
)
from orbitmq.protocol.bodies_client import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumerIdList,
    ConsumeType,
    ExpressionType,
    GetConsumerListByGroupResponseBody,
    GroupList,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    ProducerData,
    SubscriptionData,
    TopicList,
    UnlockBatchRequestBody,
)
from orbitmq.protocol.bodies_core import (
    MASTER_ID,
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicRouteData,
)
from orbitmq.protocol.body_fields import BodyError, JsonBody
from orbitmq.protocol.properties_text import decode_properties_text, encode_properties_text

__all__ = [
    "MASTER_ID",
    "BodyError",
    "BrokerData",
    "ClusterInfo",
    "Connection",
    "ConsumeFromWhere",
    "ConsumeStats",
    "ConsumeType",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerIdList",
    "ConsumerOffsetWrapper",
    "DataVersion",
    "DelayOffsetWrapper",
    "ExpressionType",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "GroupList",
    "HeartbeatData",
    "JsonBody",
    "KVTable",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageModel",
    "OffsetWrapper",
    "ProducerConnection",
    "ProducerData",
    "QueueData",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
    "decode_properties_text",
    "encode_properties_text",
]
