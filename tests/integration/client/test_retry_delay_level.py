"""Issue 12 C.4: a message the listener answers RECONSUME_LATER for comes back through delay level
3 + reconsumeTimes (RocketMQ: the consumer sends delayLevel 0, the broker picks 3 + reconsumeTimes, so
the first redelivery waits level 3 = 10 s by default). Short levels (level n = n s) keep it quick; the
level used is read from the redelivered message's DELAY property, not from timing."""

from __future__ import annotations

from orbitmq.client.aio import (
    ConsumeConcurrentlyContext,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from orbitmq.testing import ServerProcess

from .conftest import Admin, client_config, eventually, unique


async def test_first_redelivery_uses_level_three_then_four(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("RetryLvl"), unique("rl")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=1)
    seen: list[MessageExt] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        seen.extend(msgs)

        return ConsumeStatus.RECONSUME_LATER if len(seen) < 3 else ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        group, config=client_config(namesrv), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    await consumer.start()
    producer = Producer(unique("pg"), config=client_config(namesrv))
    await producer.start()
    try:
        await producer.send(Message(topic, b"again"))
        await eventually(
            lambda: len(seen) >= 3,
            timeout=25,
            what="two redeliveries (the 30 s route poll must not be needed)",
        )
    finally:
        await producer.shutdown()
        await consumer.shutdown()
    assert [m.reconsume_times for m in seen[:3]] == [0, 1, 2]
    assert seen[0].properties.get("DELAY") is None
    assert [m.properties.get("DELAY") for m in seen[1:3]] == ["3", "4"]
