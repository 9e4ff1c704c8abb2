"""SQL92 property filtering end to end: orbitmq's consumers with `MessageSelector.by_sql` against a real
`orbitmq serve` with enablePropertyFilter on (only matching messages arrive) and off (the consumer is
refused at start with the broker's reason), and a broken expression refused at CHECK_CLIENT_CONFIG."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from orbitmq.client.aio import (
    ConsumeConcurrentlyContext,
    ConsumeStatus,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageSelector,
    Producer,
    PushConsumer,
)
from orbitmq.common.errors import ClientError
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess
from orbitmq.testing.launch import start_serve
from orbitmq.transport import RemotingClient

from .conftest import Admin, client_config, eventually, unique

SMALL = {"mappedFileSizeCommitLog": 4 * 1024 * 1024, "mappedFileSizeConsumeQueue": 20 * 6000}


@pytest.fixture(scope="module")
def filtering(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_serve(tmp_path_factory.mktemp("sqlon"), enablePropertyFilter="true", **SMALL) as proc:
        yield proc


@pytest.fixture(scope="module")
def not_filtering(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_serve(tmp_path_factory.mktemp("sqloff"), **SMALL) as proc:
        yield proc


async def _send(serve: ServerProcess, topic: str) -> None:
    """Ten messages: a=0..9, tag even/odd; message 7 has no `a`, message 8 a non-number. Then four
    sentinels with a='end' (both queues get some): once they arrive, everything before them was seen."""
    producer = Producer(unique("pg"), config=client_config(serve))
    await producer.start()
    try:
        for i in range(10):
            msg = Message(topic, f"m{i}".encode())
            msg.tags = "even" if i % 2 == 0 else "odd"
            if i == 8:
                msg.properties["a"] = "eight"
            elif i != 7:
                msg.properties["a"] = str(i)
            await producer.send(msg)
        for i in range(4):
            await producer.send(Message(topic, f"end{i}".encode(), properties={"a": "end"}))
    finally:
        await producer.shutdown()


async def _topic(serve: ServerProcess) -> str:
    topic = unique("sql")
    async with Admin(serve) as admin:
        await admin.create_topic(topic, [serve], queues=2)
    return topic


async def test_push_consumer_gets_only_selected_messages(filtering: ServerProcess) -> None:
    topic = await _topic(filtering)
    await _send(filtering, topic)
    got: list[bytes] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        got.extend(m.body for m in msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        unique("cg"), config=client_config(filtering), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    # a > 3 selects 4, 5, 6, 9 ("eight" fails to convert, which fails the whole message; 7 has no
    # a); TAGS keeps the even ones. The sentinels match first (OR evaluates left to right, as in Java).
    selector = "a = 'end' OR a > 3 AND TAGS IN ('even') OR a BETWEEN 0 AND 1"
    consumer.subscribe(topic, MessageSelector.by_sql(selector))
    consumer.register_listener(listener)
    await consumer.start()
    try:
        await eventually(lambda: sum(b.startswith(b"end") for b in got) == 4, what="the sentinels")
    finally:
        await consumer.shutdown()
    assert sorted(b for b in got if not b.startswith(b"end")) == [b"m0", b"m1", b"m4", b"m6"]


async def test_lite_pull_consumer_with_expression_type_argument(filtering: ServerProcess) -> None:
    topic = await _topic(filtering)
    await _send(filtering, topic)
    consumer = LitePullConsumer(
        unique("lg"), config=client_config(filtering), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    consumer.subscribe(
        topic, "a IS NULL OR NOT (a IN ('0', '2', '3', '4', '5', '6', '8', '9'))", expression_type="SQL92"
    )
    await consumer.start()
    got: list[bytes] = []
    try:
        for _ in range(100):
            got += [m.body for m in await consumer.poll(timeout=0.2)]
            if sum(b.startswith(b"end") for b in got) == 4:
                break
    finally:
        await consumer.shutdown()
    assert sorted(b for b in got if not b.startswith(b"end")) == [b"m1", b"m7", b"m8"]


async def test_consumer_refused_at_start_when_property_filter_is_off(not_filtering: ServerProcess) -> None:
    topic = await _topic(not_filtering)
    consumer = PushConsumer(unique("cg"), config=client_config(not_filtering))
    consumer.subscribe(topic, MessageSelector.by_sql("a > 1"))
    consumer.register_listener(lambda msgs, ctx: ConsumeStatus.CONSUME_SUCCESS)
    with pytest.raises(ClientError, match="does not support consumer to filter message by SQL92"):
        await consumer.start()
    assert not consumer.started


async def test_bad_expression_refused_at_start(filtering: ServerProcess) -> None:
    topic = await _topic(filtering)
    consumer = PushConsumer(unique("cg"), config=client_config(filtering))
    consumer.subscribe(topic, MessageSelector.by_sql("a > 'x'"))
    consumer.register_listener(lambda msgs, ctx: ConsumeStatus.CONSUME_SUCCESS)
    with pytest.raises(ClientError, match=r"Invalid MessageSelector\. value .x. cannot be compared"):
        await consumer.start()


async def _check(addr: str, subscription: dict[str, object]) -> RemotingCommand:
    client = RemotingClient()
    try:
        body = orjson.dumps({"clientId": "c1", "group": "g1", "subscriptionData": subscription})
        request = RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=body)
        return await client.invoke(addr, request, 5.0)
    finally:
        await client.close()


def _sub(expression: str, expression_type: str = "SQL92") -> dict[str, object]:
    return {"topic": "t", "subString": expression, "expressionType": expression_type, "subVersion": 1}


async def test_check_client_config_raw(filtering: ServerProcess, not_filtering: ServerProcess) -> None:
    on, off = filtering.broker_addr, not_filtering.broker_addr
    assert (await _check(on, _sub("a > 5"))).code == ResponseCode.SUCCESS
    bad = await _check(on, _sub("a >"))
    assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and "Invalid MessageSelector" in (
        bad.remark or ""
    )
    refused = await _check(off, _sub("a > 5"))
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert "enablePropertyFilter" in (refused.remark or "")
    # TAG subscriptions pass either way, whatever their text
    assert (await _check(off, _sub("a || b", "TAG"))).code == ResponseCode.SUCCESS
    unknown = await _check(on, _sub("x", "GROOVY"))
    assert unknown.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_pull_with_sql_when_filter_is_off_is_refused(
    not_filtering: ServerProcess, tmp_path: Path
) -> None:
    topic = await _topic(not_filtering)
    async with Admin(not_filtering) as admin:
        from orbitmq.client.api import FLAG_SUBSCRIPTION
        from orbitmq.common.errors import BrokerError
        from orbitmq.message.model import MessageQueue

        with pytest.raises(BrokerError) as err:
            await admin.instance.api.pull_message(
                not_filtering.broker_addr,
                group="g",
                mq=MessageQueue(topic, "broker-a", 0),
                offset=0,
                max_nums=32,
                sys_flag=FLAG_SUBSCRIPTION,
                commit_offset=0,
                suspend_timeout_ms=0,
                subscription="a > 1",
                sub_version=0,
                expression_type="SQL92",
                timeout=5.0,
            )
    assert err.value.code == ResponseCode.SYSTEM_ERROR
    assert "filter message by SQL92" in (err.value.remark or "")


def test_spark_range_reader_reads_with_sql_filter(filtering: ServerProcess) -> None:
    """The Spark source's sqlFilter option reaches the broker as a SQL92 pull subscription."""
    pytest.importorskip("pyarrow")
    from orbitmq.spark.options import parse_source_options
    from orbitmq.spark.range_reader import RangeSpec, read_range

    opts = parse_source_options(
        {"namesrv": filtering.address, "topic": "t", "sqlFilter": "a < 3"}, streaming=False
    )
    assert opts.sql_filter == "a < 3"
    topic = asyncio.run(_topic(filtering))
    asyncio.run(_send(filtering, topic))
    bodies: list[bytes] = []
    for queue_id in (0, 1):
        spec = RangeSpec(
            topic=topic, broker="broker-a", queue_id=queue_id, start=0, end=7, address=filtering.broker_addr,
            namesrv=(filtering.address,), group="orbitmq_spark_reader", tags="a = 'end' OR a < 3",
            pull_batch_size=4, pull_timeout_ms=5000, pull_concurrency=1, fail_on_data_loss=True,
            expression_type="SQL92",
        )  # fmt: skip
        for batch in read_range(spec):
            bodies += batch.column("body").to_pylist()
    assert sorted(bodies) == [b"end0", b"end1", b"end2", b"end3", b"m0", b"m1", b"m2"]
