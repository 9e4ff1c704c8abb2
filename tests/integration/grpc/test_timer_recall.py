"""Timer messages from the official 5.x Python client: a delivery timestamp goes through the broker's timer
wheel (no delay level), arrives within a second of its time, and RecallMessage with the send's recall handle
takes one back before it is delivered."""

from __future__ import annotations

import asyncio
import time

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
