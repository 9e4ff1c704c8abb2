"""LitePullConsumer against real processes: subscribe and poll, assign + seek, manual commit,
pause/resume."""

from __future__ import annotations

from orbitmq.client.aio import LitePullConsumer, Message, MessageExt, MessageQueue, Producer
from orbitmq.testing import ServerProcess

from .conftest import Admin, client_config, eventually, unique


async def poll_until(consumer: LitePullConsumer, n: int, timeout: float = 20.0) -> list[MessageExt]:
    got: list[MessageExt] = []

    async def enough() -> bool:
        got.extend(await consumer.poll(0.2))
        return len(got) >= n

    await eventually(enough, timeout=timeout, what=f"{n} polled messages")
    return got


async def test_subscribe_poll_and_auto_commit(namesrv: ServerProcess, broker: ServerProcess) -> None:
    topic, group = unique("LiteSub"), unique("LG")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker])
        for i in range(20):
            await producer.send(Message.create(topic, f"m{i}", tags="keep" if i % 2 == 0 else "skip"))
        consumer = LitePullConsumer(
            group,
            config=client_config(namesrv),
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            auto_commit_interval=0.0,
        )
        consumer.subscribe(topic, "keep")
        await consumer.start()
        try:
            got = await poll_until(consumer, 10)
            assert sorted(m.body for m in got) == sorted(f"m{i}".encode() for i in range(0, 20, 2))
            assert all(m.tags == "keep" for m in got)
            await consumer.poll(0.1)  # auto commit runs inside poll
            committed = {mq: await consumer.committed(mq) for mq in consumer.assignment()}
            assert sum(committed.values()) == 20  # filtered messages are passed over too
        finally:
            await consumer.shutdown()


async def test_assign_seek_commit_pause(namesrv: ServerProcess, broker: ServerProcess) -> None:
    topic, group = unique("LiteAssign"), unique("LA")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=2)
        mq = MessageQueue(topic, "broker-a", 0)
        for i in range(10):
            await producer.send(Message.create(topic, f"q0-{i}"), queue=mq)
        consumer = LitePullConsumer(group, config=client_config(namesrv), auto_commit=False)
        await consumer.start()
        await consumer.assign([mq])
        try:
            assert consumer.assignment() == [mq]
            await consumer.seek_to_begin(mq)
            first = await poll_until(consumer, 10)
            assert [m.body for m in first] == [f"q0-{i}".encode() for i in range(10)]
            # Manual mode: nothing committed yet (a fresh queue reads as 0 or not found, fact sheet 3.5).
            assert await consumer.committed(mq) in (-1, 0)
            await consumer.commit()
            assert await consumer.committed(mq) == 10

            await consumer.seek(mq, 7)
            again = await poll_until(consumer, 3)
            assert [m.queue_offset for m in again] == [7, 8, 9]

            consumer.pause([mq])
            await producer.send(Message.create(topic, "while-paused"), queue=mq)
            assert await consumer.poll(1.0) == []
            consumer.resume([mq])
            resumed = await poll_until(consumer, 1)
            assert resumed[0].body == b"while-paused"

            await consumer.seek_to_end(mq)
            assert await consumer.poll(0.5) == []
            assert await consumer.max_offset(mq) == 11
        finally:
            await consumer.shutdown()
