"""SendMessage from the official 5.x Python client, read back by orbitmq's own 4.x PushConsumer: normal
messages with tag, keys and properties, FIFO message groups, delivery timestamps, and the refusals."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import pytest
from rocketmq import ClientConfiguration, Credentials, Message, Producer
from rocketmq.grpc_protocol import Code, Encoding, MessageType, MessagingServiceStub, SendMessageRequest

from orbitmq.client.aio import ConsumeConcurrentlyContext, MessageExt, PushConsumer
from orbitmq.client.config import ClientConfig

from .conftest import MAX_MESSAGE_SIZE, GrpcServe, metadata, unique


@contextmanager
def producer(
    serve: GrpcServe, topic: str, checker: object = None, credentials: tuple[str, str] = ("", "")
) -> Iterator[Producer]:
    """The official 5.x Producer on `topic`, started, shut down after (`checker`: a TransactionChecker)."""
    client = Producer(ClientConfiguration(serve.grpc_address, Credentials(*credentials)), (topic,), checker)
    client.startup()
    try:
        yield client
    finally:
        client.shutdown()


def message(topic: str, body: bytes, **fields: object) -> Message:
    msg = Message()
    msg.topic = topic
    msg.body = body
    for name, value in fields.items():
        if name == "properties":
            for key, prop in dict(value).items():  # type: ignore[call-overload]
                msg.add_property(key, prop)
        else:
            setattr(msg, name, value)
    return msg


@asynccontextmanager
async def consumer_4x(serve: GrpcServe, topic: str, expression: str = "*") -> AsyncIterator[list[MessageExt]]:
    """orbitmq's own 4.x PushConsumer on `topic` from its first offset; yields what it received."""
    received: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> None:
        received.extend(msgs)

    config = ClientConfig(namesrv_addrs=[serve.namesrv], rebalance_interval=1.0)
    consumer = PushConsumer(unique("G4x"), config=config, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, expression)
    consumer.register_listener(listener)  # type: ignore[arg-type]
    await consumer.start()
    try:
        yield received
    finally:
        await consumer.shutdown()


async def eventually(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_a_4x_consumer_reads_tags_keys_and_properties(serve: GrpcServe) -> None:
    topic = unique("Normal")
    await serve.create_topic_async(topic)
    with producer(serve, topic) as client:
        sent = [
            message(
                topic, f"m{i}".encode(), tag="TagA", keys=f"k{i}", properties={"color": "red", "n": str(i)}
            )
            for i in range(3)
        ]
        other = message(topic, b"other", tag="TagB")
        receipts = [await asyncio.to_thread(client.send, m) for m in [*sent, other]]
    async with consumer_4x(serve, topic, "TagA") as received:
        await eventually(lambda: len(received) >= 3, "three TagA messages")
        await asyncio.sleep(0.5)  # a TagB message would have come by now
    by_body = {m.body: m for m in received}
    assert set(by_body) == {b"m0", b"m1", b"m2"}
    for i in range(3):
        got = by_body[f"m{i}".encode()]
        assert got.tags == "TagA"
        assert got.keys == f"k{i}"
        assert got.properties["color"] == "red" and got.properties["n"] == str(i)
        assert got.unique_id == receipts[i].message_id  # UNIQ_KEY: the 5.x message id
        assert got.properties["PGROUP"] == topic  # RocketMQ 5: the topic is the producer group
        assert got.queue_offset == receipts[i].offset


async def test_fifo_message_groups_keep_one_queue_each(serve: GrpcServe) -> None:
    topic = unique("Fifo")
    await serve.create_topic_async(topic, queues=8)
    groups = [f"order-{g}" for g in range(4)]
    with producer(serve, topic) as client:
        for i in range(5):
            for group in groups:
                await asyncio.to_thread(
                    client.send, message(topic, f"{group}:{i}".encode(), message_group=group)
                )
    async with consumer_4x(serve, topic) as received:
        await eventually(lambda: len(received) >= 20, "twenty FIFO messages")
    queues: dict[str, set[int]] = {}
    order: dict[str, list[tuple[int, int]]] = {}
    for m in received:
        group = m.properties["__SHARDINGKEY"]
        assert m.body.decode().startswith(group + ":")
        queues.setdefault(group, set()).add(m.queue_id)
        order.setdefault(group, []).append((m.queue_offset, int(m.body.decode().split(":")[1])))
    assert set(queues) == set(groups)
    assert all(len(q) == 1 for q in queues.values()), queues  # one queue per message group
    for pairs in order.values():  # stored in send order
        assert [n for _, n in sorted(pairs)] == [0, 1, 2, 3, 4]


async def test_a_delivery_timestamp_delays_the_message(serve: GrpcServe) -> None:
    topic = unique("Delay")
    await serve.create_topic_async(topic)
    arrivals: dict[bytes, float] = {}
    async with consumer_4x(serve, topic) as received:
        with producer(serve, topic) as client:
            await asyncio.to_thread(client.send, message(topic, b"now"))
            deliver_at = int(time.time()) + 3  # the Python client sends whole seconds
            await asyncio.to_thread(client.send, message(topic, b"later", delivery_timestamp=deliver_at))

        def arrived() -> bool:
            for m in received:
                arrivals.setdefault(m.body, time.time())
            return b"later" in arrivals

        await eventually(arrived, "the delayed message")
    later = next(m for m in received if m.body == b"later")
    assert later.properties["TIMER_DELIVER_MS"] == str(deliver_at * 1000)
    assert arrivals[b"later"] >= deliver_at - 0.05  # never early (a delay level at or above the wait)
    assert arrivals[b"later"] - arrivals[b"now"] >= 1.5


def raw_send(stub: MessagingServiceStub, topic: str, body: bytes = b"x", **system: object) -> object:
    request = SendMessageRequest()
    msg = request.messages.add(body=body)
    msg.topic.name = topic
    msg.system_properties.message_id = str(system.pop("message_id", "01ABCDEF"))
    msg.system_properties.message_type = MessageType.NORMAL
    msg.system_properties.body_encoding = Encoding.IDENTITY
    for key, value in dict(system.pop("properties", {})).items():  # type: ignore[call-overload]
        msg.user_properties[key] = value
    for name, value in system.items():
        if name == "delivery_timestamp":
            msg.system_properties.delivery_timestamp.FromSeconds(int(value))  # type: ignore[call-overload]
        else:
            setattr(msg.system_properties, name, value)
    return stub.SendMessage(request, metadata=metadata("raw-1"), timeout=5)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ({"topic": "missing"}, Code.TOPIC_NOT_FOUND),
        ({"topic": "bad topic!"}, Code.ILLEGAL_TOPIC),
        ({"body": b""}, Code.MESSAGE_BODY_EMPTY),
        ({"body": b"x" * (MAX_MESSAGE_SIZE + 1)}, Code.MESSAGE_BODY_TOO_LARGE),
        ({"message_id": " "}, Code.ILLEGAL_MESSAGE_ID),
        ({"tag": "a|b"}, Code.ILLEGAL_MESSAGE_TAG),
        ({"properties": {"UNIQ_KEY": "mine"}}, Code.ILLEGAL_MESSAGE_PROPERTY_KEY),
        ({"properties": {"k": "v" * 17000}}, Code.MESSAGE_PROPERTIES_TOO_LARGE),
        ({"message_group": "g" * 64}, Code.ILLEGAL_MESSAGE_GROUP),
        ({"delivery_timestamp": time.time() + 4 * 24 * 3600}, Code.ILLEGAL_DELIVERY_TIME),
    ],
)
def test_send_refusals(
    serve: GrpcServe, stub: MessagingServiceStub, case: dict[str, object], expected: int
) -> None:
    topic = unique("Refused")
    serve.create_topic(topic)
    fields = dict(case)
    target = str(fields.pop("topic", topic))
    if target == "missing":
        target = unique("Missing")
    response = raw_send(stub, target, **fields)
    assert response.status.code == expected, response  # type: ignore[attr-defined]


def test_the_official_producer_reports_an_unknown_topic(serve: GrpcServe) -> None:
    topic = unique("Unknown")
    with producer(serve, topic) as client, pytest.raises(Exception, match=topic):
        client.send(message(topic, b"x"))
