"""Typed custom headers (extFields) of the requests and responses orbitmq serves and sends.

One dataclass per Java header class of RocketMQ 4.9.7 (fact sheet sections 3.1-3.5), declared with
the field spec of `orbitmq.protocol.header_spec`: attribute = snake_case, key = the Java field name
(or RocketMQ's short V2 name). Use `Cls.from_ext(cmd.ext_fields)` and `RemotingCommand(...,
ext_fields=header.to_ext())`. Requests without a header (HEART_BEAT, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ,
GET_BROKER_CLUSTER_INFO, ...) have no class. This module knows nothing about what the fields mean
to a broker or a client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Self

from orbitmq.protocol.header_spec import B, Header, HeaderError, I, L, S, header

__all__ = ["Header", "HeaderError"]  # extended below with every header class

DEFAULT_TOPIC = "TBW102"

# ------------------------------------------------------------------ send (3.1, 3.2)


@header
class SendMessageRequestHeader(Header):
    """SEND_MESSAGE (V1, long names: to_ext/from_ext) and SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE
    (short names a..n: to_ext_v2/from_ext_v2)."""

    producer_group: str = S("producerGroup", v2="a")
    topic: str = S("topic", v2="b")
    queue_id: int = I("queueId", v2="e")
    sys_flag: int = I("sysFlag", v2="f")
    born_timestamp: int = L("bornTimestamp", v2="g")
    flag: int = I("flag", v2="h", default=0, required=True)
    default_topic: str = S("defaultTopic", v2="c", default=DEFAULT_TOPIC, required=True)
    default_topic_queue_nums: int = I("defaultTopicQueueNums", v2="d", default=4, required=True)
    properties: str | None = S("properties", v2="i", default=None)
    reconsume_times: int | None = I("reconsumeTimes", v2="j", default=None)
    unit_mode: bool = B("unitMode", v2="k", default=False)
    max_reconsume_times: int | None = I("maxReconsumeTimes", v2="l", default=None)
    batch: bool = B("batch", v2="m", default=False)
    broker_name: str | None = S("bname", v2="n", default=None)

    def to_ext_v2(self) -> dict[str, str]:
        raise NotImplementedError  # compiled by @header

    @classmethod
    def from_ext_v2(cls, ext: Mapping[str, str]) -> Self:
        raise NotImplementedError  # compiled by @header

    @classmethod
    def from_request(cls, code: int, ext: Mapping[str, str]) -> Self:
        """Decode by request code: SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324) use long names,
        SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320), SEND_REPLY_MESSAGE_V2 (325) short ones."""
        return cls.from_ext(ext) if code in (10, 324) else cls.from_ext_v2(ext)


@header
class SendMessageResponseHeader(Header):
    msg_id: str = S("msgId")
    queue_id: int = I("queueId")
    queue_offset: int = L("queueOffset")
    transaction_id: str | None = S("transactionId", default=None)
    # extra ext fields a 4.9.7 broker always adds to a successful send response
    msg_region: str | None = S("MSG_REGION", default=None)
    trace_on: bool | None = B("TRACE_ON", default=None)


# ------------------------------------------------------------------ pull (3.3, 3.4)


@header
class PullMessageRequestHeader(Header):
    consumer_group: str = S("consumerGroup")
    topic: str = S("topic")
    queue_id: int = I("queueId")
    queue_offset: int = L("queueOffset")
    max_msg_nums: int = I("maxMsgNums")
    sys_flag: int = I("sysFlag")
    commit_offset: int = L("commitOffset")
    suspend_timeout_millis: int = L("suspendTimeoutMillis")
    sub_version: int = L("subVersion")
    subscription: str | None = S("subscription", default=None)
    expression_type: str | None = S("expressionType", default=None)
    broker_name: str | None = S("bname", default=None)


@header
class PullMessageResponseHeader(Header):
    suggest_which_broker_id: int = L("suggestWhichBrokerId")
    next_begin_offset: int = L("nextBeginOffset")
    min_offset: int = L("minOffset")
    max_offset: int = L("maxOffset")


# ------------------------------------------------------------------ offsets and queries (3.5)


@header
class QueryConsumerOffsetRequestHeader(Header):
    consumer_group: str = S("consumerGroup")
    topic: str = S("topic")
    queue_id: int = I("queueId")
    broker_name: str | None = S("bname", default=None)


@header
class QueryConsumerOffsetResponseHeader(Header):
    offset: int = L("offset")


@header
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str = S("consumerGroup")
    topic: str = S("topic")
    queue_id: int = I("queueId")
    commit_offset: int = L("commitOffset")
    broker_name: str | None = S("bname", default=None)


@header
class GetMaxOffsetRequestHeader(Header):
    topic: str = S("topic")
    queue_id: int = I("queueId")
    broker_name: str | None = S("bname", default=None)


@header
class GetMaxOffsetResponseHeader(Header):
    offset: int = L("offset")


@header
class GetMinOffsetRequestHeader(Header):
    topic: str = S("topic")
    queue_id: int = I("queueId")
    broker_name: str | None = S("bname", default=None)


@header
class GetMinOffsetResponseHeader(Header):
    offset: int = L("offset")


@header
class GetEarliestMsgStoretimeRequestHeader(Header):
    topic: str = S("topic")
    queue_id: int = I("queueId")
    broker_name: str | None = S("bname", default=None)


@header
class GetEarliestMsgStoretimeResponseHeader(Header):
    timestamp: int = L("timestamp")


@header
class SearchOffsetRequestHeader(Header):
    topic: str = S("topic")
    queue_id: int = I("queueId")
    timestamp: int = L("timestamp")
    broker_name: str | None = S("bname", default=None)


@header
class SearchOffsetResponseHeader(Header):
    offset: int = L("offset")


@header
class QueryMessageRequestHeader(Header):
    topic: str = S("topic")
    key: str = S("key")
    max_num: int = I("maxNum")
    begin_timestamp: int = L("beginTimestamp")
    end_timestamp: int = L("endTimestamp")
    # not a Java header field: the client adds it to extFields; true = query by UNIQ_KEY
    unique_key_query: bool | None = B("_UNIQUE_KEY_QUERY", default=None)


@header
class QueryMessageResponseHeader(Header):
    index_last_update_timestamp: int = L("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int = L("indexLastUpdatePhyoffset")


@header
class ViewMessageRequestHeader(Header):
    offset: int = L("offset")  # commit-log physical offset


@header
class QueryConsumeQueueRequestHeader(Header):
    topic: str | None = S("topic", default=None)
    queue_id: int = I("queueId", default=0)
    index: int = L("index", default=0)
    count: int = I("count", default=0)
    consumer_group: str | None = S("consumerGroup", default=None)


# ------------------------------------------------------------------ clients, retries, transactions


@header
class UnregisterClientRequestHeader(Header):
    client_id: str = S("clientID")
    producer_group: str | None = S("producerGroup", default=None)
    consumer_group: str | None = S("consumerGroup", default=None)


@header
class ConsumerSendMsgBackRequestHeader(Header):
    offset: int = L("offset")  # commit-log offset of the consumed message
    group: str = S("group")
    delay_level: int = I("delayLevel")
    origin_msg_id: str | None = S("originMsgId", default=None)
    origin_topic: str | None = S("originTopic", default=None)
    unit_mode: bool = B("unitMode", default=False)
    max_reconsume_times: int | None = I("maxReconsumeTimes", default=None)
    broker_name: str | None = S("bname", default=None)


@header
class EndTransactionRequestHeader(Header):
    producer_group: str = S("producerGroup")
    tran_state_table_offset: int = L("tranStateTableOffset")
    commit_log_offset: int = L("commitLogOffset")
    commit_or_rollback: int = I("commitOrRollback")  # 0 unknown, 8 commit, 12 rollback
    msg_id: str = S("msgId")
    from_transaction_check: bool = B("fromTransactionCheck", default=False)
    transaction_id: str | None = S("transactionId", default=None)
    broker_name: str | None = S("bname", default=None)


@header
class CheckTransactionStateRequestHeader(Header):
    tran_state_table_offset: int = L("tranStateTableOffset")
    commit_log_offset: int = L("commitLogOffset")
    msg_id: str | None = S("msgId", default=None)
    transaction_id: str | None = S("transactionId", default=None)
    offset_msg_id: str | None = S("offsetMsgId", default=None)
    broker_name: str | None = S("bname", default=None)


@header
class GetConsumerListByGroupRequestHeader(Header):
    consumer_group: str = S("consumerGroup")


@header
class NotifyConsumerIdsChangedRequestHeader(Header):
    consumer_group: str = S("consumerGroup")


@header
class GetConsumerRunningInfoRequestHeader(Header):
    consumer_group: str = S("consumerGroup")
    client_id: str = S("clientId")
    jstack_enable: bool = B("jstackEnable", default=False)


@header
class ConsumeMessageDirectlyResultRequestHeader(Header):
    consumer_group: str = S("consumerGroup")
    client_id: str | None = S("clientId", default=None)
    msg_id: str | None = S("msgId", default=None)
    broker_name: str | None = S("brokerName", default=None)


@header
class ResetOffsetRequestHeader(Header):
    """RESET_CONSUMER_CLIENT_OFFSET (220) and INVOKE_BROKER_TO_RESET_OFFSET (222)."""

    topic: str = S("topic")
    group: str = S("group")
    timestamp: int = L("timestamp")
    is_force: bool = B("isForce")


@header
class GetConsumerStatusRequestHeader(Header):
    """GET_CONSUMER_STATUS_FROM_CLIENT (221) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)."""

    topic: str = S("topic")
    group: str = S("group")
    client_addr: str | None = S("clientAddr", default=None)


# ------------------------------------------------------------------ namesrv


@header
class PutKVConfigRequestHeader(Header):
    namespace: str = S("namespace")
    key: str = S("key")
    value: str = S("value")


@header
class GetKVConfigRequestHeader(Header):
    namespace: str = S("namespace")
    key: str = S("key")


@header
class GetKVConfigResponseHeader(Header):
    value: str | None = S("value", default=None)


@header
class DeleteKVConfigRequestHeader(Header):
    namespace: str = S("namespace")
    key: str = S("key")


@header
class GetKVListByNamespaceRequestHeader(Header):
    namespace: str = S("namespace")


@header
class RegisterBrokerRequestHeader(Header):
    broker_name: str = S("brokerName")
    broker_addr: str = S("brokerAddr")  # "ip:port"
    cluster_name: str = S("clusterName")
    ha_server_addr: str = S("haServerAddr")  # "ip:haPort"
    broker_id: int = L("brokerId")
    compressed: bool = B("compressed", default=False)
    body_crc32: int = I("bodyCrc32", default=0)  # 0 = not checked


@header
class RegisterBrokerResponseHeader(Header):
    ha_server_addr: str | None = S("haServerAddr", default=None)
    master_addr: str | None = S("masterAddr", default=None)


@header
class UnregisterBrokerRequestHeader(Header):
    broker_name: str = S("brokerName")
    broker_addr: str = S("brokerAddr")
    cluster_name: str = S("clusterName")
    broker_id: int = L("brokerId")


@header
class GetRouteInfoRequestHeader(Header):
    topic: str = S("topic")
    accept_standard_json_only: bool | None = B("acceptStandardJsonOnly", default=None)


@header
class WipeWritePermOfBrokerRequestHeader(Header):
    broker_name: str = S("brokerName")


@header
class WipeWritePermOfBrokerResponseHeader(Header):
    wipe_topic_count: int = I("wipeTopicCount")


@header
class AddWritePermOfBrokerRequestHeader(Header):
    broker_name: str = S("brokerName")


@header
class AddWritePermOfBrokerResponseHeader(Header):
    add_topic_count: int = I("addTopicCount")


@header
class DeleteTopicFromNamesrvRequestHeader(Header):
    topic: str = S("topic")
    cluster_name: str | None = S("clusterName", default=None)


@header
class GetTopicsByClusterRequestHeader(Header):
    cluster: str = S("cluster")


@header
class QueryDataVersionRequestHeader(Header):
    broker_name: str = S("brokerName")
    broker_addr: str = S("brokerAddr")
    cluster_name: str = S("clusterName")
    broker_id: int = L("brokerId")


@header
class QueryDataVersionResponseHeader(Header):
    changed: bool = B("changed")


# ------------------------------------------------------------------ broker administration


@header
class CreateTopicRequestHeader(Header):
    """UPDATE_AND_CREATE_TOPIC (17)."""

    topic: str = S("topic")
    read_queue_nums: int = I("readQueueNums")
    write_queue_nums: int = I("writeQueueNums")
    perm: int = I("perm")
    default_topic: str = S("defaultTopic", default=DEFAULT_TOPIC, required=True)
    topic_filter_type: str = S("topicFilterType", default="SINGLE_TAG", required=True)
    topic_sys_flag: int | None = I("topicSysFlag", default=None)
    order: bool = B("order", default=False, required=True)


@header
class DeleteTopicRequestHeader(Header):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str = S("topic")


@header
class GetTopicStatsInfoRequestHeader(Header):
    topic: str = S("topic")


@header
class GetConsumerConnectionListRequestHeader(Header):
    consumer_group: str = S("consumerGroup")


@header
class GetProducerConnectionListRequestHeader(Header):
    producer_group: str = S("producerGroup")


@header
class GetConsumeStatsRequestHeader(Header):
    consumer_group: str = S("consumerGroup")
    topic: str | None = S("topic", default=None)


@header
class DeleteSubscriptionGroupRequestHeader(Header):
    group_name: str = S("groupName")
    remove_offset: bool = B("removeOffset", default=False)


@header
class GetBrokerConfigResponseHeader(Header):
    version: str = S("version")  # the broker's DataVersion as JSON


@header
class QueryTopicConsumeByWhoRequestHeader(Header):
    topic: str = S("topic")


@header
class QueryConsumeTimeSpanRequestHeader(Header):
    topic: str = S("topic")
    group: str = S("group")


@header
class CloneGroupOffsetRequestHeader(Header):
    src_group: str = S("srcGroup")
    dest_group: str = S("destGroup")
    topic: str | None = S("topic", default=None)
    offline: bool = B("offline", default=False)


@header
class ViewBrokerStatsDataRequestHeader(Header):
    stats_name: str = S("statsName")
    stats_key: str = S("statsKey")


@header
class GetBrokerConsumeStatsRequestHeader(Header):
    is_order: bool = B("isOrder")


@header
class QueryCorrectionOffsetHeader(Header):
    compare_group: str = S("compareGroup")
    topic: str = S("topic")
    filter_groups: str | None = S("filterGroups", default=None)


@header
class ResumeCheckHalfMessageRequestHeader(Header):
    msg_id: str | None = S("msgId", default=None)


ALL_HEADERS: tuple[type[Header], ...] = tuple(
    value
    for value in list(globals().values())
    if isinstance(value, type) and issubclass(value, Header) and value is not Header
)
__all__ += [cls.__name__ for cls in ALL_HEADERS]
