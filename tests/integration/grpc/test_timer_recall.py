"""Timer messages from the official 5.x Python client: a delivery timestamp goes through the broker's timer
wheel (no delay level), arrives within a second of its time, and RecallMessage with the send's recall handle
takes one back before it is delivered; orbitmq's own 4.x producer's timer properties beside it."""

from __future__ import annotations

import asyncio
import time

from orbitmq.client.aio import Message, Producer
from orbitmq.client.config import ClientConfig

from .conftest import GrpcServe, unique
from .test_send import consumer_4x, eventually, message, producer


async def test_recalled_timer_never_arrives_the_other_arrives_on_time(serve: GrpcServe) -> None:
    topic = unique("Timer")
    await serve.create_topic_async(topic)
    arrivals: dict[bytes, float] = {}
    async with consumer_4x(serve, topic) as received:
        with producer(serve, topic) as client:
            deliver_at = int(time.time()) + 3  # the Python client sends whole seconds
            kept = await asyncio.to_thread(
                client.send, message(topic, b"kept", delivery_timestamp=deliver_at)
            )
            dropped = await asyncio.to_thread(
                client.send, message(topic, b"dropped", delivery_timestamp=deliver_at)
            )
            assert kept.recall_handle and dropped.recall_handle
            recalled = await asyncio.to_thread(client.recall_message, topic, dropped.recall_handle)
            assert recalled == dropped.message_id

        def arrived() -> bool:
            for m in received:
                arrivals.setdefault(m.body, time.time())
            return b"kept" in arrivals

        await eventually(arrived, "the timer message")
        await asyncio.sleep(1.5)  # the recalled one had the same slot: it would be here by now
    kept_msg = next(m for m in received if m.body == b"kept")
    assert "DELAY" not in kept_msg.properties  # the wheel, not a delay level
    assert 0 <= kept_msg.store_timestamp - deliver_at * 1000 <= 1100
    assert b"dropped" not in arrivals


async def test_a_4x_producers_timer_reaches_a_4x_consumer_on_time(serve: GrpcServe) -> None:
    """orbitmq's own 4.x Producer with TIMER_DELAY_MS and __STARTDELIVERTIME, its PushConsumer reading."""
    topic = unique("Timer4x")
    await serve.create_topic_async(topic)
    producer = Producer(unique("P4x"), config=ClientConfig(namesrv_addrs=[serve.namesrv]))
    await producer.start()
    due: dict[bytes, int] = {}
    try:
        async with consumer_4x(serve, topic) as received:
            now = int(time.time() * 1000)
            for body, props in (
                (b"delay-ms", {"TIMER_DELAY_MS": "1500"}),
                (b"start", {"__STARTDELIVERTIME": str(now + 2500)}),
            ):
                result = await producer.send(Message.create(topic, body, properties=props))
                due[body] = (now + 1500) if body == b"delay-ms" else now + 2500
                assert result.status.name == "SEND_OK"
            await eventually(lambda: len(received) >= 2, "the two timer messages")
    finally:
        await producer.shutdown()
    for msg in received:
        # sent no earlier than `now`: a delay counts from the broker's receipt, so allow the send's time
        assert -50 <= msg.store_timestamp - due[msg.body] <= 1300, msg.body
