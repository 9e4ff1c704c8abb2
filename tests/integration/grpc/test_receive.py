"""Receiving with the official 5.x SimpleConsumer: receive with an invisible duration, ack, change the
invisible duration, redelivery with its attempt counted, the dead letter queue after the last attempt,
and messages a 4.x producer sent arriving with their tags, keys and properties."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, SimpleConsumer
from rocketmq.grpc_protocol import FilterType

from orbitmq.admin.api import AdminClient
from orbitmq.client.aio import Message as Message4x
from orbitmq.client.aio import Producer as Producer4x
from orbitmq.client.config import ClientConfig
from orbitmq.message.model import MessageQueue
from orbitmq.protocol.bodies_admin import SubscriptionGroupConfig

from .conftest import GrpcServe, grpc_serve, unique
from .test_send import message, producer

AWAIT_S = 5  # the consumer's long polling (the endpoint's least)


@contextmanager
def simple_consumer(serve: GrpcServe, group: str, topic: str, tags: str = "*") -> Iterator[SimpleConsumer]:
    consumer = SimpleConsumer(
        ClientConfiguration(serve.grpc_address, Credentials()),
        group,
        {topic: FilterExpression(tags)},
        await_duration=AWAIT_S,
    )
    consumer.startup()
    try:
        yield consumer
    finally:
        consumer.shutdown()


def receive_until(
    consumer: SimpleConsumer, count: int, invisible_s: int, timeout: float = 30
) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"received {len(got)} of {count}"
        got += consumer.receive(count - len(got), invisible_s)
    return got


def start_then_send(consumer: SimpleConsumer, send: Callable[[], None]) -> None:
    """A new group starts at the queues' ends (RocketMQ 5): a first receive fixes them, then send."""
    assert consumer.receive(1, 10) == []
    send()


def test_receive_ack_and_no_redelivery(serve: GrpcServe) -> None:
    topic, group = unique("Pop"), unique("PopG")
    serve.create_topic(topic)
    with simple_consumer(serve, group, topic) as consumer, producer(serve, topic) as client:
        bodies = {f"m{i}".encode() for i in range(3)}
        start_then_send(consumer, lambda: [client.send(message(topic, b)) for b in sorted(bodies)])
        got = receive_until(consumer, 3, invisible_s=10)
        assert {m.body for m in got} == bodies
        assert all(m.delivery_attempt == 1 and m.receipt_handle for m in got)
        for m in got:
            consumer.ack(m)
        assert consumer.receive(16, 10) == []  # acked: gone (a 5 s long poll)


def test_change_invisible_duration_redelivers_with_the_attempt_counted(serve: GrpcServe) -> None:
    topic, group = unique("PopInv"), unique("PopInvG")
    serve.create_topic(topic)
    with simple_consumer(serve, group, topic) as consumer, producer(serve, topic) as client:
        start_then_send(consumer, lambda: client.send(message(topic, b"again", tag="T")))
        [first] = receive_until(consumer, 1, invisible_s=30)
        first_handle = first.receipt_handle
        consumer.change_invisible_duration(first, 1)  # visible again in 1 s instead of 30
        assert first.receipt_handle != first_handle  # a new handle for the new invisible time
        time.sleep(1.2)
        [second] = receive_until(consumer, 1, invisible_s=10)
        assert second.body == b"again" and second.message_id == first.message_id
        assert second.delivery_attempt == 2
        with pytest.raises(Exception, match="expired"):
            consumer.ack(first)  # that delivery's handle is stale now
        consumer.ack(second)


def test_unacked_messages_go_to_the_dead_letter_queue_after_the_last_attempt(serve: GrpcServe) -> None:
    topic, group = unique("PopDlq"), unique("PopDlqG")
    serve.create_topic(topic)
    asyncio.run(_limit_retries(serve, group, retry_max_times=1))  # max attempts 2
    with simple_consumer(serve, group, topic) as consumer, producer(serve, topic) as client:
        start_then_send(consumer, lambda: client.send(message(topic, b"poison")))
        for attempt in (1, 2):
            [got] = receive_until(consumer, 1, invisible_s=10)
            assert (got.body, got.delivery_attempt) == (b"poison", attempt)
            consumer.change_invisible_duration(got, 0)  # fail it at once
        assert consumer.receive(1, 10) == []  # the third attempt went to the DLQ instead
    assert asyncio.run(_max_offset(serve, f"%DLQ%{group}")) == 1


async def _limit_retries(serve: GrpcServe, group: str, retry_max_times: int) -> None:
    async with AdminClient(serve.namesrv) as admin:
        config = SubscriptionGroupConfig(group, retry_max_times=retry_max_times)
        await admin.update_subscription_group(serve.proc.broker_addr, config)


async def _max_offset(serve: GrpcServe, topic: str) -> int:
    from orbitmq.client.instance import ClientInstance

    instance = ClientInstance(ClientConfig(namesrv_addrs=[serve.namesrv]))
    try:
        return await instance.api.get_max_offset(serve.proc.broker_addr, MessageQueue(topic, "broker-a", 0))
    finally:
        await instance.shutdown()


def test_a_4x_producers_messages_reach_a_5x_consumer_with_tags_keys_and_properties(serve: GrpcServe) -> None:
    topic, group = unique("Pop4x"), unique("Pop4xG")
    serve.create_topic(topic)

    async def send_4x() -> None:
        async with Producer4x(unique("PG4x"), config=ClientConfig(namesrv_addrs=[serve.namesrv])) as p:
            sent = Message4x.create(topic, b"from-4x", tags="TagA", keys="k1 k2")
            sent.properties["color"] = "blue"
            await p.send(sent)
            await p.send(Message4x.create(topic, b"filtered-out", tags="TagB"))

    with simple_consumer(serve, group, topic, tags="TagA") as consumer:
        start_then_send(consumer, lambda: asyncio.run(send_4x()))
        [got] = receive_until(consumer, 1, invisible_s=10)
        consumer.ack(got)
        assert consumer.receive(1, 10) == []  # TagB was filtered by the broker
    assert got.body == b"from-4x"
    assert got.tag == "TagA"
    assert got.keys == {"k1", "k2"}
    assert got.properties == {"color": "blue"}
    assert not got.corrupted  # the body digest matched


def test_nothing_unacked_is_lost_across_a_kill_9(tmp_path: Path) -> None:
    """The group's offset in the broker stops at the oldest un-acked message: after kill -9 and a
    restart, that message comes again, the acked one before it does not."""
    topic, group = unique("PopKill"), unique("PopKillG")
    conf = {"flushConsumerOffsetInterval": 200}
    with grpc_serve(tmp_path, **conf) as serve:
        serve.create_topic(topic, queues=1)
        with simple_consumer(serve, group, topic) as consumer, producer(serve, topic) as client:
            start_then_send(
                consumer, lambda: [client.send(message(topic, b)) for b in (b"acked", b"pending")]
            )
            got = {m.body: m for m in receive_until(consumer, 2, invisible_s=60)}
            consumer.ack(got[b"acked"])
            time.sleep(1.0)  # the broker persists consumer offsets every 200 ms here
            serve.proc.kill()
    with grpc_serve(tmp_path, **conf) as serve, simple_consumer(serve, group, topic) as consumer:
        again = receive_until(consumer, 1, invisible_s=10)
        assert [m.body for m in again] == [b"pending"]
        assert again[0].delivery_attempt == 1  # the in-flight count itself is not kept (yet)
        consumer.ack(again[0])
        assert consumer.receive(4, 10) == []


def test_a_sql92_filter_selects_by_user_property(serve: GrpcServe) -> None:
    topic, group = unique("PopSql"), unique("PopSqlG")
    serve.create_topic(topic, queues=1)
    consumer = SimpleConsumer(
        ClientConfiguration(serve.grpc_address, Credentials()),
        group,
        {topic: FilterExpression("a > 5 AND color = 'red'", FilterType.SQL)},
        await_duration=AWAIT_S,
    )
    consumer.startup()
    try:
        with producer(serve, topic) as client:

            def send() -> None:
                for body, a, color in (
                    (b"small", "3", "red"),
                    (b"big-blue", "9", "blue"),
                    (b"big-red", "10", "red"),
                ):
                    client.send(message(topic, body, properties={"a": a, "color": color}))

            start_then_send(consumer, send)
        [got] = receive_until(consumer, 1, invisible_s=10)
        assert got.body == b"big-red"
        consumer.ack(got)
        assert consumer.receive(4, 10) == []
    finally:
        consumer.shutdown()
