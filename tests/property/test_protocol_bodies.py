"""Property tests: every JSON body round-trips (standard, fastjson and pretty forms); garbage gives a
BodyError / JavaJsonError and nothing else."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.message.model import MessageQueue
from orbitmq.protocol import bodies as b
from orbitmq.protocol import java_json
from orbitmq.protocol.bodies import BodyError
from orbitmq.protocol.java_json import JavaJsonError

text = st.text(max_size=8)
name = st.text(min_size=1, max_size=8)  # a field the body refuses to go without
i64 = st.integers(-(2**63), 2**63 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
names = st.from_regex(r"[A-Za-z0-9_%|-]{1,16}", fullmatch=True)
mqs = st.builds(MessageQueue, text, text, i32)
floats = st.floats(allow_nan=False, allow_infinity=False)

queue_data = st.builds(b.QueueData, text, i32, i32, i32, i32)
broker_data = st.builds(b.BrokerData, text, text, st.dictionaries(i64, text, max_size=3))
subscription = st.builds(
    b.SubscriptionData,
    text,
    text,
    st.lists(text, max_size=3),
    st.lists(i32, max_size=3),
    i64,
    st.none() | st.sampled_from(["TAG", "SQL92"]),
    st.booleans(),
)
data_version = st.builds(b.DataVersion, i64, i64)
topic_config = st.builds(b.TopicConfig, text, i32, i32, i32, text, i32, st.booleans())
connection = st.builds(b.Connection, text, text, text, i32)
optional_text = st.none() | text

BODIES: dict[type[b.JsonBody], st.SearchStrategy[Any]] = {
    b.QueueData: queue_data,
    b.BrokerData: broker_data,
    b.TopicRouteData: st.builds(
        b.TopicRouteData,
        st.lists(queue_data, max_size=3),
        st.lists(broker_data, max_size=3),
        st.dictionaries(text, st.lists(text, max_size=2), max_size=2),
        optional_text,
    ),
    b.ClusterInfo: st.builds(
        b.ClusterInfo,
        st.dictionaries(text, broker_data, max_size=3),
        st.dictionaries(text, st.lists(text, max_size=3), max_size=3),
    ),
    b.SubscriptionData: subscription,
    b.HeartbeatData: st.builds(
        b.HeartbeatData,
        text,
        st.lists(st.builds(b.ProducerData, text), max_size=2),
        st.lists(
            st.builds(
                b.ConsumerData, text, text, text, text, st.lists(subscription, max_size=2), st.booleans()
            ),
            max_size=2,
        ),
    ),
    b.DataVersion: data_version,
    b.TopicConfig: topic_config,
    b.TopicConfigSerializeWrapper: st.builds(
        b.TopicConfigSerializeWrapper, st.dictionaries(text, topic_config, max_size=3), data_version
    ),
    b.RegisterBrokerBody: st.builds(
        b.RegisterBrokerBody,
        st.builds(
            b.TopicConfigSerializeWrapper, st.dictionaries(text, topic_config, max_size=3), data_version
        ),
        st.lists(text, max_size=2),
    ),
    b.KVTable: st.builds(b.KVTable, st.dictionaries(text, text, max_size=4)),
    b.TopicList: st.builds(b.TopicList, st.lists(text, max_size=4), optional_text),
    b.GroupList: st.builds(b.GroupList, st.lists(text, max_size=4)),
    b.GetConsumerListByGroupResponseBody: st.builds(
        b.GetConsumerListByGroupResponseBody, st.lists(text, max_size=4)
    ),
    b.LockBatchRequestBody: st.builds(b.LockBatchRequestBody, text, text, st.lists(mqs, max_size=3)),
    b.UnlockBatchRequestBody: st.builds(b.UnlockBatchRequestBody, text, text, st.lists(mqs, max_size=3)),
    b.LockBatchResponseBody: st.builds(b.LockBatchResponseBody, st.lists(mqs, max_size=3)),
    b.SubscriptionGroupConfig: st.builds(
        b.SubscriptionGroupConfig,
        name,
        st.booleans(),
        st.booleans(),
        st.booleans(),
        i32,
        i32,
        i64,
        i64,
        st.booleans(),
    ),
    b.SubscriptionGroupWrapper: st.builds(
        b.SubscriptionGroupWrapper,
        st.dictionaries(text, st.builds(b.SubscriptionGroupConfig, name), max_size=3),
        data_version,
    ),
    b.ConsumerOffsetWrapper: st.builds(
        b.ConsumerOffsetWrapper, st.dictionaries(text, st.dictionaries(i32, i64, max_size=3), max_size=3)
    ),
    b.DelayOffsetWrapper: st.builds(b.DelayOffsetWrapper, st.dictionaries(i32, i64, max_size=4)),
    b.TopicStatsTable: st.builds(
        b.TopicStatsTable, st.dictionaries(mqs, st.builds(b.TopicOffset, i64, i64, i64), max_size=3)
    ),
    b.ConsumeStats: st.builds(
        b.ConsumeStats, st.dictionaries(mqs, st.builds(b.OffsetWrapper, i64, i64, i64), max_size=3), floats
    ),
    b.Connection: connection,
    b.ConsumerConnection: st.builds(
        b.ConsumerConnection,
        st.lists(connection, max_size=2),
        st.dictionaries(text, subscription, max_size=2),
        optional_text,
        optional_text,
        optional_text,
    ),
    b.ProducerConnection: st.builds(b.ProducerConnection, st.lists(connection, max_size=2)),
    b.ResetOffsetBody: st.builds(b.ResetOffsetBody, st.dictionaries(mqs, i64, max_size=3)),
    b.GetConsumerStatusBody: st.builds(
        b.GetConsumerStatusBody,
        st.dictionaries(mqs, i64, max_size=2),
        st.dictionaries(text, st.dictionaries(mqs, i64, max_size=2), max_size=2),
    ),
}


def test_every_body_has_a_strategy() -> None:
    exported = {getattr(b, name) for name in b.__all__}
    body_classes = {
        c for c in exported if isinstance(c, type) and issubclass(c, b.JsonBody) and c is not b.JsonBody
    }
    missing = body_classes - set(BODIES) - {b.ProducerData, b.ConsumerData, b.TopicOffset, b.OffsetWrapper}
    assert not missing


@pytest.mark.parametrize("cls", list(BODIES), ids=lambda c: c.__name__)
@settings(max_examples=40)
@given(data=st.data())
def test_body_round_trip(cls: type[b.JsonBody], data: st.DataObject) -> None:
    body = data.draw(BODIES[cls])
    assert cls.from_json(body.to_json()) == body
    assert cls.from_json(body.to_json_pretty()) == body
    if isinstance(body, b.TopicRouteData | b.ClusterInfo):
        assert cls.from_json(body.to_json(standard=False)) == body


@given(
    st.builds(
        b.RegisterBrokerBody,
        st.builds(
            b.TopicConfigSerializeWrapper,
            st.dictionaries(names, st.builds(b.TopicConfig, names, i32, i32, i32, names), max_size=4).map(
                lambda table: {c.topic_name: c for c in table.values()}
            ),
            data_version,
        ),
        st.lists(text, max_size=2),
    )
)
def test_register_broker_compressed_round_trip(body: b.RegisterBrokerBody) -> None:
    assert b.RegisterBrokerBody.decode(body.encode(compressed=True), compressed=True) == body


json_values = st.recursive(
    st.none() | st.booleans() | i64 | floats | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=12,
)


@pytest.mark.parametrize("cls", list(BODIES), ids=lambda c: c.__name__)
@settings(max_examples=30)
@given(value=json_values)
def test_random_json_binds_or_body_error(cls: type[b.JsonBody], value: Any) -> None:
    try:
        body = cls.from_any(value)
    except BodyError:
        return
    assert isinstance(body, cls)


@settings(max_examples=300)
@given(st.binary(max_size=80) | st.text(alphabet="{}[]:,'\"0123456789abcnulltrue-.\\ ", max_size=40))
def test_random_text_parses_or_java_json_error(data: bytes | str) -> None:
    try:
        java_json.loads(data)
    except JavaJsonError:
        pass
    try:
        b.TopicRouteData.from_json(data)
        b.RegisterBrokerBody.decode(data if isinstance(data, bytes) else data.encode(), compressed=True)
    except BodyError:
        pass
