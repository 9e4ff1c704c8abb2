"""LitePullConsumer hands out every (queue, offset) exactly once: a fresh consumer of a group whose
offsets were reset to 0, then a second consumer joining (rebalance), then a seek.

Reported once: a fresh consumer (first offset, group offsets reset to 0) returned the queue-0 messages
twice before delivering queue 1's. Cause found: a queue lost in a rebalance and regained got a new state
whose generation (0) equalled the old state's, so the old state's batches still in the buffer were handed
out and the regained queue pulled the same offsets again (second test; fixed by consumer-wide generations).
"""

from __future__ import annotations

from collections import Counter

from orbitmq.client.aio import LitePullConsumer, Message, MessageExt, MessageQueue, Producer
from orbitmq.testing import ServerProcess

from .conftest import Admin, client_config, eventually, unique

QUEUES = 4
PER_QUEUE = 25


def positions(msgs: list[MessageExt]) -> Counter[tuple[int, int]]:
    return Counter((m.queue_id, m.queue_offset) for m in msgs)


async def poll_all(consumers: list[LitePullConsumer], expected: set[tuple[int, int]]) -> list[MessageExt]:
    """Poll until every expected position was seen, then a little longer to catch late duplicates."""
    got: list[MessageExt] = []

    async def enough() -> bool:
        for c in consumers:
            got.extend(await c.poll(0.05))
        return set(positions(got)) >= expected

    await eventually(enough, timeout=20, what=f"{len(expected)} positions")
    for _ in range(4):
        for c in consumers:
            got.extend(await c.poll(0.05))
    return got


def assert_exactly_once(got: list[MessageExt], expected: set[tuple[int, int]]) -> None:
    counts = positions(got)
    duplicates = {pos: n for pos, n in counts.items() if n > 1}
    assert not duplicates, f"delivered more than once: {sorted(duplicates.items())[:10]}"
    assert set(counts) == expected


async def send_round(producer: Producer, topic: str, round_no: int) -> None:
    for q in range(QUEUES):
        mq = MessageQueue(topic, "broker-a", q)
        for i in range(PER_QUEUE):
            await producer.send(Message.create(topic, f"r{round_no}-q{q}-{i}"), queue=mq)


async def test_lite_pull_each_position_once_across_rebalance_and_seek(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("LiteOnce"), unique("LO")
    mqs = [MessageQueue(topic, "broker-a", q) for q in range(QUEUES)]
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=QUEUES)
        await send_round(producer, topic, 0)
        # The group's offsets reset to 0 beforehand, as an admin reset leaves them.
        addr = broker.broker_addr
        for mq in mqs:
            await admin.instance.api.update_consumer_offset(addr, group, mq, 0, oneway=False)
            assert await admin.instance.api.query_consumer_offset(addr, group, mq) == 0

        first = LitePullConsumer(
            group,
            config=client_config(namesrv),
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            auto_commit_interval=0.2,
            pull_batch_size=8,
        )
        first.subscribe(topic, "*")
        await first.start()
        second: LitePullConsumer | None = None
        try:
            round0 = {(q, i) for q in range(QUEUES) for i in range(PER_QUEUE)}
            got = await poll_all([first], round0)
            assert_exactly_once(got, round0)
            for m in got:
                assert m.body == f"r0-q{m.queue_id}-{m.queue_offset}".encode()
            await first.commit()

            # Rebalance: a second consumer joins; the queues split and nothing already polled comes back.
            second = LitePullConsumer(
                group,
                config=client_config(namesrv),
                consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                auto_commit_interval=0.2,
                pull_batch_size=8,
            )
            second.subscribe(topic, "*")
            await second.start()
            c1, c2 = first, second

            def split() -> bool:
                a, b = set(c1.assignment()), set(c2.assignment())
                return len(a) == len(b) == QUEUES // 2 and a | b == set(mqs)

            await eventually(split, what="queues split between two consumers")
            await send_round(producer, topic, 1)
            round1 = {(q, i) for q in range(QUEUES) for i in range(PER_QUEUE, 2 * PER_QUEUE)}
            got = await poll_all([first, second], round1)
            assert_exactly_once(got, round1)

            # Seek: back to the middle of an owned queue; exactly the tail comes again, once.
            mq = first.assignment()[0]
            await first.seek(mq, PER_QUEUE // 2)
            tail = {(mq.queue_id, i) for i in range(PER_QUEUE // 2, 2 * PER_QUEUE)}
            got = await poll_all([first], tail)
            assert_exactly_once(got, tail)
        finally:
            if second is not None:
                await second.shutdown()
            await first.shutdown()


async def test_lite_pull_queue_lost_and_regained_with_unpolled_batches(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    """A queue taken away while its pulled batches still wait in the buffer, then handed back: the stale
    batches must be dropped (the regained queue pulls again from the committed offset)."""
    topic, group = unique("LiteBack"), unique("LB")
    mqs = [MessageQueue(topic, "broker-a", q) for q in range(QUEUES)]
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=QUEUES)
        await send_round(producer, topic, 0)
        first = LitePullConsumer(
            group, config=client_config(namesrv), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        first.subscribe(topic, "*")
        await first.start()
        try:
            # Nothing polled yet: everything sits in the consumer's buffer (an internal counter).
            await eventually(lambda: first._buffered == QUEUES * PER_QUEUE, what="all messages buffered")
            second = LitePullConsumer(
                group, config=client_config(namesrv), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
            )
            second.subscribe(topic, "*")
            await second.start()
            try:
                await eventually(lambda: len(first.assignment()) == QUEUES // 2, what="first gives queues up")
            finally:
                await second.shutdown()  # polled nothing: commits the offsets it started from
            await eventually(lambda: first.assignment() == mqs, what="first regains every queue")

            expected = {(q, i) for q in range(QUEUES) for i in range(PER_QUEUE)}
            got = await poll_all([first], expected)
            assert_exactly_once(got, expected)
            await first.commit()
            for mq in mqs:
                assert await first.committed(mq) == PER_QUEUE
        finally:
            await first.shutdown()
