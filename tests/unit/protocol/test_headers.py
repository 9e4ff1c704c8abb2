"""Header ext-field names and encodings against the fact sheet's tables (sections 3.1-3.5)."""

import pytest

from orbitmq.protocol import headers as h
from orbitmq.protocol.headers import HeaderError

# class -> (required keys, optional keys), as the fact sheet lists them
EXPECTED_KEYS: dict[type[h.Header], tuple[set[str], set[str]]] = {
    h.SendMessageRequestHeader: (
        {
            "producerGroup",
            "topic",
            "defaultTopic",
            "defaultTopicQueueNums",
            "queueId",
            "sysFlag",
            "bornTimestamp",
            "flag",
        },
        {"properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname"},
    ),
    h.SendMessageResponseHeader: (
        {"msgId", "queueId", "queueOffset"},
        {"transactionId", "MSG_REGION", "TRACE_ON"},
    ),
    h.PullMessageRequestHeader: (
        {
            "consumerGroup",
            "topic",
            "queueId",
            "queueOffset",
            "maxMsgNums",
            "sysFlag",
            "commitOffset",
            "suspendTimeoutMillis",
            "subVersion",
        },
        {"subscription", "expressionType", "bname"},
    ),
    h.PullMessageResponseHeader: (
        {"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"},
        set(),
    ),
    h.QueryMessageRequestHeader: (
        {"topic", "key", "maxNum", "beginTimestamp", "endTimestamp"},
        {"_UNIQUE_KEY_QUERY"},
    ),
    h.QueryMessageResponseHeader: ({"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}, set()),
    h.QueryConsumerOffsetRequestHeader: ({"consumerGroup", "topic", "queueId"}, {"bname"}),
    h.QueryConsumerOffsetResponseHeader: ({"offset"}, set()),
    h.UpdateConsumerOffsetRequestHeader: ({"consumerGroup", "topic", "queueId", "commitOffset"}, {"bname"}),
    h.CreateTopicRequestHeader: (
        {"topic", "defaultTopic", "readQueueNums", "writeQueueNums", "perm", "topicFilterType", "order"},
        {"topicSysFlag"},
    ),
    h.SearchOffsetRequestHeader: ({"topic", "queueId", "timestamp"}, {"bname"}),
    h.SearchOffsetResponseHeader: ({"offset"}, set()),
    h.GetMaxOffsetRequestHeader: ({"topic", "queueId"}, {"bname"}),
    h.GetMaxOffsetResponseHeader: ({"offset"}, set()),
    h.GetMinOffsetRequestHeader: ({"topic", "queueId"}, {"bname"}),
    h.GetMinOffsetResponseHeader: ({"offset"}, set()),
    h.GetEarliestMsgStoretimeRequestHeader: ({"topic", "queueId"}, {"bname"}),
    h.GetEarliestMsgStoretimeResponseHeader: ({"timestamp"}, set()),
    h.ViewMessageRequestHeader: ({"offset"}, set()),
    h.UnregisterClientRequestHeader: ({"clientID"}, {"producerGroup", "consumerGroup"}),
    h.ConsumerSendMsgBackRequestHeader: (
        {"offset", "group", "delayLevel"},
        {"originMsgId", "originTopic", "unitMode", "maxReconsumeTimes", "bname"},
    ),
    h.EndTransactionRequestHeader: (
        {"producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback", "msgId"},
        {"fromTransactionCheck", "transactionId", "bname"},
    ),
    h.CheckTransactionStateRequestHeader: (
        {"tranStateTableOffset", "commitLogOffset"},
        {"msgId", "transactionId", "offsetMsgId", "bname"},
    ),
    h.GetConsumerListByGroupRequestHeader: ({"consumerGroup"}, set()),
    h.NotifyConsumerIdsChangedRequestHeader: ({"consumerGroup"}, set()),
    h.PutKVConfigRequestHeader: ({"namespace", "key", "value"}, set()),
    h.GetKVConfigRequestHeader: ({"namespace", "key"}, set()),
    h.GetKVConfigResponseHeader: (set(), {"value"}),
    h.DeleteKVConfigRequestHeader: ({"namespace", "key"}, set()),
    h.GetKVListByNamespaceRequestHeader: ({"namespace"}, set()),
    h.RegisterBrokerRequestHeader: (
        {"brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId"},
        {"compressed", "bodyCrc32"},
    ),
    h.RegisterBrokerResponseHeader: (set(), {"haServerAddr", "masterAddr"}),
    h.UnregisterBrokerRequestHeader: ({"brokerName", "brokerAddr", "clusterName", "brokerId"}, set()),
    h.GetRouteInfoRequestHeader: ({"topic"}, {"acceptStandardJsonOnly"}),
    h.WipeWritePermOfBrokerRequestHeader: ({"brokerName"}, set()),
    h.WipeWritePermOfBrokerResponseHeader: ({"wipeTopicCount"}, set()),
    h.AddWritePermOfBrokerRequestHeader: ({"brokerName"}, set()),
    h.AddWritePermOfBrokerResponseHeader: ({"addTopicCount"}, set()),
    h.DeleteTopicFromNamesrvRequestHeader: ({"topic"}, {"clusterName"}),
    h.DeleteTopicRequestHeader: ({"topic"}, set()),
    h.GetTopicsByClusterRequestHeader: ({"cluster"}, set()),
    h.GetTopicStatsInfoRequestHeader: ({"topic"}, set()),
    h.GetConsumerConnectionListRequestHeader: ({"consumerGroup"}, set()),
    h.GetProducerConnectionListRequestHeader: ({"producerGroup"}, set()),
    h.GetConsumeStatsRequestHeader: ({"consumerGroup"}, {"topic"}),
    h.DeleteSubscriptionGroupRequestHeader: ({"groupName"}, {"removeOffset"}),
    h.QueryDataVersionRequestHeader: ({"brokerName", "brokerAddr", "clusterName", "brokerId"}, set()),
    h.QueryDataVersionResponseHeader: ({"changed"}, set()),
    h.ResetOffsetRequestHeader: ({"topic", "group", "timestamp", "isForce"}, set()),
    h.GetConsumerStatusRequestHeader: ({"topic", "group"}, {"clientAddr"}),
    h.GetConsumerRunningInfoRequestHeader: ({"consumerGroup", "clientId"}, {"jstackEnable"}),
    h.ConsumeMessageDirectlyResultRequestHeader: ({"consumerGroup"}, {"clientId", "msgId", "brokerName"}),
    h.GetBrokerConfigResponseHeader: ({"version"}, set()),
    h.QueryConsumeQueueRequestHeader: (set(), {"topic", "queueId", "index", "count", "consumerGroup"}),
    h.QueryTopicConsumeByWhoRequestHeader: ({"topic"}, set()),
    h.QueryConsumeTimeSpanRequestHeader: ({"topic", "group"}, set()),
    h.CloneGroupOffsetRequestHeader: ({"srcGroup", "destGroup"}, {"topic", "offline"}),
    h.ViewBrokerStatsDataRequestHeader: ({"statsName", "statsKey"}, set()),
    h.GetBrokerConsumeStatsRequestHeader: ({"isOrder"}, set()),
    h.QueryCorrectionOffsetHeader: ({"compareGroup", "topic"}, {"filterGroups"}),
    h.ResumeCheckHalfMessageRequestHeader: (set(), {"msgId"}),
}


def test_every_header_is_covered() -> None:
    assert set(EXPECTED_KEYS) == set(h.ALL_HEADERS)


@pytest.mark.parametrize("cls", list(EXPECTED_KEYS), ids=lambda c: c.__name__)
def test_ext_keys_and_required_fields(cls: type[h.Header]) -> None:
    required, optional = EXPECTED_KEYS[cls]
    assert set(cls.EXT_KEYS) == required | optional
    for key in required:
        with pytest.raises(HeaderError, match=f"the custom field {key} is null"):
            cls.from_ext(dict.fromkeys(set(cls.EXT_KEYS) - {key}, "1"))


def test_send_v2_short_names_golden() -> None:
    header = h.SendMessageRequestHeader(
        producer_group="PG",
        topic="TopicTest",
        queue_id=3,
        sys_flag=0,
        born_timestamp=1690000000123,
        flag=0,
        properties="TAGS\x01TagA\x02",
        reconsume_times=0,
        broker_name="broker-a",
    )
    assert header.to_ext_v2() == {
        "a": "PG",
        "b": "TopicTest",
        "c": "TBW102",
        "d": "4",
        "e": "3",
        "f": "0",
        "g": "1690000000123",
        "h": "0",
        "i": "TAGS\x01TagA\x02",
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-a",
    }
    assert header.to_ext() == {
        "producerGroup": "PG",
        "topic": "TopicTest",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": "3",
        "sysFlag": "0",
        "bornTimestamp": "1690000000123",
        "flag": "0",
        "properties": "TAGS\x01TagA\x02",
        "reconsumeTimes": "0",
        "unitMode": "false",
        "batch": "false",
        "bname": "broker-a",
    }
    assert h.SendMessageRequestHeader.from_request(310, header.to_ext_v2()) == header
    assert h.SendMessageRequestHeader.from_request(10, header.to_ext()) == header
    assert set(h.SendMessageRequestHeader.EXT_KEYS_V2) == set("abcdefghijklmn")


def test_send_batch_flag_and_ali_ons_values() -> None:
    # what ali-ons sends: numbers already turned into strings by decode_command
    ext = {"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "-1", "f": "0", "g": "1", "h": "0", "m": "true"}
    header = h.SendMessageRequestHeader.from_ext_v2(ext)
    assert header.batch is True and header.queue_id == -1 and header.unit_mode is False
    assert header.properties is None and header.max_reconsume_times is None


def test_pull_request_golden() -> None:
    ext = {
        "consumerGroup": "CG",
        "topic": "T",
        "queueId": "1",
        "queueOffset": "100",
        "maxMsgNums": "32",
        "sysFlag": "3",
        "commitOffset": "-1",
        "suspendTimeoutMillis": "15000",
        "subscription": "TagA || TagB",
        "subVersion": "1690000000000",
        "expressionType": "TAG",
    }
    header = h.PullMessageRequestHeader.from_ext(ext)
    assert header.commit_offset == -1 and header.sys_flag == 3 and header.broker_name is None
    assert header.to_ext() == ext


def test_bad_numbers_name_the_field() -> None:
    with pytest.raises(HeaderError, match="queueId"):
        h.GetMaxOffsetRequestHeader.from_ext({"topic": "T", "queueId": "x"})
    with pytest.raises(HeaderError, match="queueId"):
        h.GetMaxOffsetRequestHeader.from_ext({"topic": "T", "queueId": str(2**31)})
    with pytest.raises(HeaderError, match="offset"):
        h.ViewMessageRequestHeader.from_ext({"offset": str(2**63)})
    assert h.ViewMessageRequestHeader.from_ext({"offset": str(2**63 - 1)}).offset == 2**63 - 1


def test_booleans_as_java_parses_them() -> None:
    ext = {"topic": "T", "group": "G", "timestamp": "5", "isForce": "TRUE"}
    assert h.ResetOffsetRequestHeader.from_ext(ext).is_force is True
    ext["isForce"] = "yes"
    assert h.ResetOffsetRequestHeader.from_ext(ext).is_force is False
    assert h.ResetOffsetRequestHeader("T", "G", 5, True).to_ext()["isForce"] == "true"
    route = h.GetRouteInfoRequestHeader("T", accept_standard_json_only=True)
    assert route.to_ext() == {"topic": "T", "acceptStandardJsonOnly": "true"}
    assert h.GetRouteInfoRequestHeader("T").to_ext() == {"topic": "T"}


def test_register_broker_defaults() -> None:
    header = h.RegisterBrokerRequestHeader(
        "broker-a", "127.0.0.1:10911", "DefaultCluster", "127.0.0.1:10912", 0
    )
    assert header.to_ext() == {
        "brokerName": "broker-a",
        "brokerAddr": "127.0.0.1:10911",
        "clusterName": "DefaultCluster",
        "haServerAddr": "127.0.0.1:10912",
        "brokerId": "0",
        "compressed": "false",
        "bodyCrc32": "0",
    }


def test_send_response_with_region_and_trace() -> None:
    ext = {"msgId": "7F00000100002A9F0000000000000000", "queueId": "0", "queueOffset": "7"}
    ext |= {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    header = h.SendMessageResponseHeader.from_ext(ext)
    assert header.queue_offset == 7 and header.msg_region == "DefaultRegion" and header.trace_on is True
    assert header.to_ext() == ext


def test_unknown_ext_keys_ignored() -> None:
    ext = {"consumerGroup": "G", "AccessKey": "ak", "Signature": "sig"}
    assert h.GetConsumerListByGroupRequestHeader.from_ext(ext).consumer_group == "G"


def test_codecs_are_compiled_on_first_use_and_then_replace_the_stubs() -> None:
    from orbitmq.protocol.header_spec import I, S, header

    @header
    class Probe(h.Header):
        topic: str = S("topic", v2="b")
        queue_id: int = I("queueId", v2="e")

    # The keys are known before any codec is compiled (start-up never compiles an unused header).
    assert (Probe.EXT_KEYS, Probe.EXT_KEYS_V2) == (("topic", "queueId"), ("b", "e"))
    stub = Probe.__dict__["from_ext"]
    with pytest.raises(HeaderError, match="queueId"):  # the first call compiles and validates
        Probe.from_ext({"topic": "T"})
    assert Probe.__dict__["from_ext"] is not stub  # the compiled codec now sits on the class
    assert Probe.from_ext({"topic": "T", "queueId": "3"}) == Probe("T", 3)
    assert Probe("T", 3).to_ext() == {"topic": "T", "queueId": "3"}
    assert Probe.from_ext_v2(Probe("U", 4).to_ext_v2()) == Probe("U", 4)
