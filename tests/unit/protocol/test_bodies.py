"""JSON bodies against the fact sheet's shapes (section 4), including fastjson's output verbatim."""

import re
import struct
import zlib

import orjson
import pytest

from orbitmq.message.model import MessageQueue
from orbitmq.protocol import bodies as b
from orbitmq.protocol.bodies import BodyError

# fact sheet 4.2, verbatim (including its line breaks)
ROUTE_FASTJSON = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster"}],\n "filterServerTable":{},\n "queueDatas":[{"brokerName":"broker-a",'
    b'"perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)

CLUSTER_FASTJSON = (
    b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)

TOPICS_JSON = (
    b'{"dataVersion":{"counter":3,"timestamp":1690000000000},"topicConfigTable":{"TopicA":{"order":false,'
    b'"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicA","topicSysFlag":0,'
    b'"writeQueueNums":4}}}'
)


def test_topic_route_from_fastjson_verbatim() -> None:
    route = b.TopicRouteData.from_json(ROUTE_FASTJSON)
    assert route.broker_datas == [
        b.BrokerData("DefaultCluster", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"})
    ]
    assert route.broker_datas[0].master_addr == "10.0.0.1:10911"
    assert route.queue_datas == [b.QueueData("broker-a", 4, 4, 6, 0)]
    assert route.filter_server_table == {} and route.order_topic_conf is None


def test_topic_route_writes_standard_and_fastjson_forms() -> None:
    route = b.TopicRouteData.from_json(ROUTE_FASTJSON)
    standard = (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,'
        b'"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )
    assert route.to_json() == standard
    assert route.to_json(standard=False) == b"".join(ROUTE_FASTJSON.split(b"\n "))
    route.order_topic_conf = "broker-a:4"
    assert b'"orderTopicConf":"broker-a:4","queueDatas"' in route.to_json()
    assert b.TopicRouteData.from_json(route.to_json()) == route


def test_cluster_info_from_fastjson_verbatim() -> None:
    info = b.ClusterInfo.from_json(CLUSTER_FASTJSON)
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.1:10911"}
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    assert info.to_json(standard=False) == CLUSTER_FASTJSON
    assert b'"brokerAddrs":{"0":"10.0.0.1:10911"}' in info.to_json()


def test_topic_config_wrapper_golden_and_pretty() -> None:
    wrapper = b.TopicConfigSerializeWrapper.from_json(TOPICS_JSON)
    assert wrapper.data_version == b.DataVersion(1690000000000, 3)
    assert wrapper.topic_config_table["TopicA"] == b.TopicConfig("TopicA", 4, 4, 6, "SINGLE_TAG", 0, False)
    assert wrapper.to_json() == TOPICS_JSON
    # Pretty form (config files): what it means, not fastjson's exact whitespace (fact sheet 13: not
    # confirmed byte for byte; Java readers ignore whitespace). Newline + tab indentation, no ": ".
    pretty = wrapper.to_json_pretty().decode()
    assert b.TopicConfigSerializeWrapper.from_json(pretty) == wrapper
    assert orjson.loads(pretty) == orjson.loads(wrapper.to_json())
    assert "\n\t" in pretty and ": " not in pretty
    assert wrapper.data_version.next_version(1690000000500) == b.DataVersion(1690000000500, 4)


def test_register_broker_body_plain_and_compressed() -> None:
    wrapper = b.TopicConfigSerializeWrapper.from_json(TOPICS_JSON)
    body = b.RegisterBrokerBody(wrapper, [])
    assert body.encode() == (b'{"filterServerList":[],"topicConfigSerializeWrapper":' + TOPICS_JSON + b"}")
    version = b'{"counter":3,"timestamp":1690000000000}'
    topic = b"TopicA 4 4 6 SINGLE_TAG"
    servers = b"[]"
    layout = (
        struct.pack(">i", len(version))
        + version
        + struct.pack(">i", 1)
        + struct.pack(">i", len(topic))
        + topic
        + struct.pack(">i", len(servers))
        + servers
    )
    # One zlib stream of that layout; the compressed bytes themselves are not pinned (fact sheet 13: only
    # the format is compatible with Java's Deflater, not its exact output).
    compressed = body.encode(compressed=True)
    assert zlib.decompress(compressed) == layout
    assert b.RegisterBrokerBody.decode(compressed, compressed=True) == body
    assert b.RegisterBrokerBody.decode(body.encode()) == body
    with pytest.raises(BodyError):
        b.RegisterBrokerBody.decode(b"not zlib", compressed=True)
    with pytest.raises(BodyError):
        b.RegisterBrokerBody.decode(zlib.compress(layout[:-3]), compressed=True)
    with pytest.raises(BodyError):
        b.TopicConfig.decode_text("TopicA 4 4 6")


def test_heartbeat_golden() -> None:
    heartbeat = b.HeartbeatData(
        "10.0.0.9@12345#987",
        [b.ProducerData("CLIENT_INNER_PRODUCER")],
        [
            b.ConsumerData(
                "CG",
                b.ConsumeType.CONSUME_PASSIVELY,
                b.MessageModel.CLUSTERING,
                b.ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                [
                    b.SubscriptionData(
                        "T", "TagA || TagB", ["TagA", "TagB"], [2598919, 2598920], 1690000000000
                    )
                ],
            )
        ],
    )
    expected = (
        b'{"clientID":"10.0.0.9@12345#987","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        b'"consumeType":"CONSUME_PASSIVELY","groupName":"CG","messageModel":"CLUSTERING","subscriptionDataSet":'
        b'[{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG",'
        b'"subString":"TagA || TagB","subVersion":1690000000000,"tagsSet":["TagA","TagB"],"topic":"T"}],'
        b'"unitMode":false}],'
        b'"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}'
    )
    assert heartbeat.to_json() == expected
    assert b.HeartbeatData.from_json(expected) == heartbeat


def test_heartbeat_from_ali_ons_without_expression_type() -> None:
    body = (
        b'{"clientID":"1.2.3.4@77","producerDataSet":[{"groupName":"PG"}],"consumerDataSet":[{"groupName":"CG",'
        b'"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        b'"subscriptionDataSet":[{"topic":"T","subString":"*","classFilterMode":false,"tagsSet":[],"codeSet":[],'
        b'"subVersion":1}],"unitMode":false}]}'
    )
    heartbeat = b.HeartbeatData.from_json(body)
    sub = heartbeat.consumer_data_set[0].subscription_data_set[0]
    assert sub.expression_type is None and sub.sub_string == "*" and sub.sub_version == 1
    assert heartbeat.producer_data_set == [b.ProducerData("PG")]


def test_small_bodies_golden() -> None:
    assert b.KVTable({"k": "v"}).to_json() == b'{"table":{"k":"v"}}'
    assert b.TopicList(["a", "b"]).to_json() == b'{"topicList":["a","b"]}'
    assert (
        b.TopicList(["a"], "1.1.1.1:10911").to_json() == b'{"brokerAddr":"1.1.1.1:10911","topicList":["a"]}'
    )
    assert b.GroupList(["g"]).to_json() == b'{"groupList":["g"]}'
    assert b.ConsumerIdList(["c1", "c2"]).to_json() == b'{"consumerIdList":["c1","c2"]}'
    assert b.GetConsumerListByGroupResponseBody.from_json(b'{"consumerIdList":["x"]}').consumer_id_list == [
        "x"
    ]
    connection = b.Connection("cid", "127.0.0.1:5555", "JAVA", 407)
    connection_json = b'{"clientAddr":"127.0.0.1:5555","clientId":"cid","language":"JAVA","version":407}'
    assert connection.to_json() == connection_json
    assert b.ProducerConnection([connection]).to_json() == b'{"connectionSet":[' + connection_json + b"]}"


def test_lock_bodies_golden() -> None:
    mq = MessageQueue("T", "b", 0)
    request = b.LockBatchRequestBody("CG", "cid", [mq])
    expected = b'{"clientId":"cid","consumerGroup":"CG","mqSet":[{"brokerName":"b","queueId":0,"topic":"T"}]}'
    assert request.to_json() == expected
    assert b.LockBatchRequestBody.from_json(expected) == request
    assert b.UnlockBatchRequestBody.from_json(expected).mq_set == [mq]
    response = b.LockBatchResponseBody([mq])
    assert response.to_json() == b'{"lockOKMQSet":[{"brokerName":"b","queueId":0,"topic":"T"}]}'


def test_subscription_group_defaults_and_wrapper() -> None:
    config = b.SubscriptionGroupConfig("G")
    assert orjson.loads(config.to_json()) == {
        "brokerId": 0,
        "consumeBroadcastEnable": True,
        "consumeEnable": True,
        "consumeFromMinEnable": True,
        "groupName": "G",
        "notifyConsumerIdsChangedEnable": True,
        "retryMaxTimes": 16,
        "retryQueueNums": 1,
        "whichBrokerWhenConsumeSlowly": 1,
    }
    assert b.SubscriptionGroupConfig.from_json(b'{"groupName":"G"}') == config
    wrapper = b.SubscriptionGroupWrapper({"G": config}, b.DataVersion(5, 1))
    assert b.SubscriptionGroupWrapper.from_json(wrapper.to_json_pretty()) == wrapper
    # as the broker reads subscriptionGroup.json and updateSubGroup: booleans and numbers as fastjson
    # binds them, and no config without a group name
    lenient = b.SubscriptionGroupConfig.from_json(
        b'{"groupName":"G","consumeEnable":"false","retryMaxTimes":"3"}'
    )
    assert (lenient.consume_enable, lenient.retry_max_times) == (False, 3)
    for nameless in (b"{}", b'{"groupName":""}'):
        with pytest.raises(b.BodyError, match="groupName is missing"):
            b.SubscriptionGroupConfig.from_json(nameless)


def test_consumer_and_delay_offsets_files() -> None:
    java_file = '{\n\t"offsetTable":{\n\t\t"TopicTest@CG":{0:250,1:251\n\t\t}\n\t}\n}'
    wrapper = b.ConsumerOffsetWrapper.from_json(java_file)
    assert wrapper.offset_table == {"TopicTest@CG": {0: 250, 1: 251}}
    # Written back: the same content, and (the fastjson rule) integer map keys unquoted; the whitespace
    # around them is not pinned.
    pretty = wrapper.to_json_pretty().decode()
    assert b.ConsumerOffsetWrapper.from_json(pretty).offset_table == wrapper.offset_table
    assert re.search(r"\{\s*0:250,\s*1:251\s*\}", pretty), pretty
    assert wrapper.to_json() == b'{"offsetTable":{"TopicTest@CG":{"0":250,"1":251}}}'
    delay = b.DelayOffsetWrapper.from_json(b'{"offsetTable":{1:0,2:15}}')
    assert delay.offset_table == {1: 0, 2: 15}
    delay_pretty = delay.to_json_pretty().decode()
    assert b.DelayOffsetWrapper.from_json(delay_pretty).offset_table == {1: 0, 2: 15}
    assert re.search(r"\{\s*1:0,\s*2:15\s*\}", delay_pretty), delay_pretty


def test_object_keyed_bodies() -> None:
    mq = MessageQueue("T", "b", 0)
    stats = b.TopicStatsTable({mq: b.TopicOffset(1, 9, 1690000000000)})
    expected = (
        b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:'
        b'{"lastUpdateTimestamp":1690000000000,"maxOffset":9,"minOffset":1}}}'
    )
    assert stats.to_json() == expected
    assert b.TopicStatsTable.from_json(expected) == stats
    consume = b.ConsumeStats({mq: b.OffsetWrapper(10, 4, 7)}, 0.0)
    consume_json = (
        b'{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:'
        b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":7}}}'
    )
    assert consume.to_json() == consume_json
    assert b.ConsumeStats.from_json(consume_json) == consume and consume.diff_total == 6
    reset = b.ResetOffsetBody({mq: 42})
    assert reset.to_json() == b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42}}'
    # the key as a JSON string (fastjson's WriteNonStringKeyAsString form) is understood too
    quoted = b'{"offsetTable":{"{\\"brokerName\\":\\"b\\",\\"queueId\\":0,\\"topic\\":\\"T\\"}":42}}'
    assert b.ResetOffsetBody.from_json(quoted) == reset
    status = b.GetConsumerStatusBody({mq: 1}, {"cid": {mq: 2}})
    assert b.GetConsumerStatusBody.from_json(status.to_json()) == status


def test_consumer_connection() -> None:
    connection = b.ConsumerConnection(
        [b.Connection("cid", "127.0.0.1:1", "PYTHON", 407)],
        {"T": b.SubscriptionData("T")},
        "CONSUME_PASSIVELY",
        "CLUSTERING",
        "CONSUME_FROM_LAST_OFFSET",
    )
    obj = orjson.loads(connection.to_json())
    assert list(obj) == [
        "connectionSet",
        "consumeFromWhere",
        "consumeType",
        "messageModel",
        "subscriptionTable",
    ]
    assert b.ConsumerConnection.from_json(connection.to_json()) == connection


def test_properties_text() -> None:
    text = b.encode_properties_text(
        {"brokerName": "broker-a", "flushDiskType": "SYNC_FLUSH", "autoCreate": True}
    )
    assert text == b"brokerName=broker-a\nflushDiskType=SYNC_FLUSH\nautoCreate=true\n"
    parsed = b.decode_properties_text(
        b"# comment\n! other\nbrokerName = broker-a\nlistenPort:10911\n"
        b"namesrvAddr=127.0.0.1:9876;\\\n  127.0.0.2:9876\n"
        b"path=C\\:\\\\store\\u00e9\nempty=\n"
    )
    assert parsed == {
        "brokerName": "broker-a",
        "listenPort": "10911",
        "namesrvAddr": "127.0.0.1:9876;127.0.0.2:9876",
        "path": "C:\\storeé",
        "empty": "",
    }


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"[]",
        b'{"brokerDatas":5}',
        b'{"queueDatas":[{"perm":"x"}]}',
        b'{"brokerDatas":[{"brokerAddrs":{"a":1}}]}',
    ],
)
def test_broken_bodies_raise_body_error(data: bytes) -> None:
    with pytest.raises(BodyError):
        b.TopicRouteData.from_json(data)
