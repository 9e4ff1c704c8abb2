"""PushConsumer against real processes: clustering with consumers joining and leaving, broadcasting,
retry to DLQ, delay levels, orderly consumption with competing consumers, offsets across restarts."""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from pathlib import Path

from orbitmq.client.aio import (
    AllocateConsistentHash,
    ConsumeConcurrentlyContext,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
)
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess

from .conftest import Admin, client_config, eventually, unique


class Recorder:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.messages: list[MessageExt] = []

    async def __call__(self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        self.messages += msgs
        self.bodies += [m.body for m in msgs]
        return ConsumeStatus.CONSUME_SUCCESS


def consumer(
    namesrv: ServerProcess, group: str, topic: str, listener: object, **options: object
) -> PushConsumer:
    c = PushConsumer(
        group, config=client_config(namesrv), consume_from_where="CONSUME_FROM_FIRST_OFFSET", **options
    )  # type: ignore[arg-type]
    c.subscribe(topic, "*")
    c.register_listener(listener)  # type: ignore[arg-type]
    return c


def owned(c: PushConsumer, topic: str) -> int:
    return sum(1 for mq in c.assigned_queues() if mq.topic == topic)


async def send_many(producer: Producer, topic: str, prefix: str, n: int) -> set[bytes]:
    bodies = {f"{prefix}-{i}".encode() for i in range(n)}
    for body in sorted(bodies):
        await producer.send(Message(topic, body))
    return bodies


async def test_clustering_join_and_leave_consumes_everything(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("Cluster"), unique("CG")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=8)
        rec = [Recorder() for _ in range(3)]
        c1 = consumer(namesrv, group, topic, rec[0])
        c2 = consumer(namesrv, group, topic, rec[1])
        await c1.start()
        await c2.start()
        try:
            await eventually(
                lambda: owned(c1, topic) == 4 and owned(c2, topic) == 4,
                what="an even split between two consumers",
            )
            steady = await send_many(producer, topic, "steady", 80)
            await eventually(
                lambda: steady <= set(rec[0].bodies) | set(rec[1].bodies), what="steady messages"
            )
            counts = Counter(rec[0].bodies + rec[1].bodies)
            assert all(counts[b] == 1 for b in steady), "a message was consumed twice in steady state"
            assert rec[0].bodies and rec[1].bodies  # both consumers worked

            c3 = consumer(namesrv, group, topic, rec[2])
            await c3.start()
            await eventually(
                lambda: (
                    {owned(c, topic) for c in (c1, c2, c3)} <= {2, 3}
                    and sum(owned(c, topic) for c in (c1, c2, c3)) == 8
                ),
                what="a three-way split",
            )
            joined = await send_many(producer, topic, "joined", 60)
            await c1.shutdown()  # leaves: its queues move to the others at once (UNREGISTER_CLIENT)
            await eventually(
                lambda: owned(c2, topic) + owned(c3, topic) == 8,
                what="the survivors owning every queue",
            )
            left = await send_many(producer, topic, "left", 60)
            all_bodies = lambda: set().union(*(r.bodies for r in rec))  # noqa: E731
            await eventually(lambda: (joined | left) <= all_bodies(), what="every message consumed")
        finally:
            for c in (c1, c2):
                await c.shutdown()
            if "c3" in locals():
                await c3.shutdown()


async def test_broadcasting_every_consumer_gets_everything(
    namesrv: ServerProcess, broker: ServerProcess, tmp_path: Path
) -> None:
    topic, group = unique("Broadcast"), unique("BG")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker])
        recs = [Recorder(), Recorder()]
        consumers = [
            consumer(
                namesrv, group, topic, r, message_model="BROADCASTING", offset_store_dir=tmp_path / "offsets"
            )
            for r in recs
        ]
        for c in consumers:
            await c.start()
        try:
            await eventually(lambda: all(owned(c, topic) == 4 for c in consumers), what="all queues each")
            sent = await send_many(producer, topic, "b", 20)
            await eventually(lambda: all(sent <= set(r.bodies) for r in recs), what="both consumers got all")
        finally:
            for c in consumers:
                await c.shutdown()
        files = list((tmp_path / "offsets").rglob("offsets.json"))
        assert len(files) == 2
        assert all('"offsetTable"' in f.read_text() for f in files)


async def test_reconsume_later_retries_then_dead_letters(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("Retry"), unique("RG")
    deliveries: list[tuple[str, int, str]] = []

    async def failing(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        deliveries.extend((m.topic, m.reconsume_times, m.body.decode()) for m in msgs)
        return ConsumeStatus.RECONSUME_LATER

    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=1)
        c = consumer(namesrv, group, topic, failing, max_reconsume_times=2)
        await c.start()
        try:
            await producer.send(Message(topic, b"poison"))
            await eventually(lambda: len(deliveries) >= 3, timeout=40, what="three deliveries")
            # The original topic is restored for retried messages, and the retry count grows.
            assert [d[0] for d in deliveries[:3]] == [topic] * 3
            assert [d[1] for d in deliveries[:3]] == [0, 1, 2]

            async def dead_lettered() -> bool:
                if await admin.instance.api.get_topic_route(f"%DLQ%{group}") is None:
                    return False
                return any(m.body == b"poison" for m in await admin.read_topic(f"%DLQ%{group}"))

            await eventually(dead_lettered, timeout=30, what="the message in the DLQ")
        finally:
            await c.shutdown()
        assert len(deliveries) == 3


async def test_delay_level_delivers_later(namesrv: ServerProcess, broker: ServerProcess) -> None:
    topic, group = unique("Delay"), unique("DG")
    arrivals: dict[bytes, float] = {}

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> None:
        for m in msgs:
            arrivals[m.body] = time.monotonic()

    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker])
        c = consumer(namesrv, group, topic, listener)
        await c.start()
        try:
            await eventually(lambda: owned(c, topic) == 4, what="queues")
            sent = time.monotonic()
            await producer.send(Message.create(topic, "later", delay_level=3))  # 3 s with the test levels
            await producer.send(Message.create(topic, "now"))
            await eventually(lambda: b"later" in arrivals, timeout=30, what="the delayed message")
        finally:
            await c.shutdown()
        assert arrivals[b"now"] - sent < arrivals[b"later"] - sent
        assert arrivals[b"later"] - sent >= 2.0


async def test_orderly_two_competing_consumers_keep_per_key_order(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("Orderly"), unique("OG")
    seen: dict[str, list[int]] = defaultdict(list)
    owners: dict[int, set[str]] = defaultdict(set)

    def make_listener(name: str) -> object:
        async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> None:
            for m in msgs:
                key, seq = m.body.decode().split(":")
                seen[key].append(int(seq))
                owners[m.queue_id].add(name)
            await asyncio.sleep(0)

        return listener

    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=4)
        consumers = []
        for name in ("one", "two"):
            c = PushConsumer(
                group, config=client_config(namesrv), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
            )
            c.subscribe(topic, "*")
            c.register_orderly_listener(make_listener(name))  # type: ignore[arg-type]
            await c.start()
            consumers.append(c)
        try:
            await eventually(
                lambda: (
                    sum(owned(c, topic) for c in consumers) == 4 and all(owned(c, topic) for c in consumers)
                ),
                what="both consumers own queues",
            )
            for i in range(80):
                key = f"k{i % 6}"
                await producer.send_orderly(Message.create(topic, f"{key}:{i}"), key)
            await eventually(lambda: sum(len(v) for v in seen.values()) >= 80, what="80 orderly messages")
        finally:
            for c in consumers:
                await c.shutdown()
        # Every key's messages exactly once, in send order (no duplicate, gap or swap).
        for k in range(6):
            assert seen[f"k{k}"] == list(range(k, 80, 6)), f"k{k}: {seen[f'k{k}']}"
        assert all(len(names) == 1 for names in owners.values())  # one consumer per queue


async def test_orderly_queues_moving_between_consumers_mid_stream_keep_order_and_exactly_once(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    """A stream of ordered messages while the group changes under it: "one" owns every queue, "two" joins
    (queues move to it), then "one" leaves (they all move to "two"). Per queue, the offsets consumed
    across both members, in consumption order, are exactly 0..n-1: nothing twice, nothing skipped, no
    reordering at a handover."""
    topic, group = unique("OrderlyMove"), unique("OM")
    consumed: list[tuple[str, int, int]] = []  # (member, queue id, queue offset) in consumption order

    def make_listener(name: str) -> object:
        async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> None:
            for m in msgs:
                consumed.append((name, m.queue_id, m.queue_offset))
            await asyncio.sleep(0.005)  # slow enough that a backlog is in flight at each handover

        return listener

    def member(name: str) -> PushConsumer:
        c = PushConsumer(group, config=client_config(namesrv), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        c.subscribe(topic, "*")
        c.register_orderly_listener(make_listener(name))  # type: ignore[arg-type]
        return c

    sent: Counter[int] = Counter()  # queue id -> messages sent to it

    async def send(n: int, start: int) -> None:
        for i in range(start, start + n):
            result = await producer.send_orderly(Message.create(topic, f"m{i}"), f"key{i % 8}")
            sent[result.message_queue.queue_id] += 1

    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=4)
        one, two = member("one"), member("two")
        await one.start()
        try:
            await eventually(lambda: owned(one, topic) == 4, what="one owns every queue")
            await send(80, 0)
            await two.start()
            await eventually(lambda: owned(one, topic) == 2 and owned(two, topic) == 2, what="queues split")
            await send(80, 80)
            await one.shutdown()
            await eventually(lambda: owned(two, topic) == 4, what="two owns every queue")
            await send(80, 160)
            await eventually(lambda: len(consumed) >= 240, what="240 consumed")
        finally:
            await one.shutdown()
            await two.shutdown()
        members = {name for name, _, _ in consumed}
        assert members == {"one", "two"}
        for q in range(4):
            offsets = [off for _, queue_id, off in consumed if queue_id == q]
            assert offsets == list(range(sent[q])), f"queue {q}: {[c for c in consumed if c[1] == q]}"


async def test_offsets_survive_a_consumer_restart(namesrv: ServerProcess, broker: ServerProcess) -> None:
    topic, group = unique("Restart"), unique("SG")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker])
        first = Recorder()
        c = consumer(namesrv, group, topic, first)
        await c.start()
        try:
            before = await send_many(producer, topic, "before", 30)
            await eventually(lambda: before <= set(first.bodies), what="first batch")
        finally:
            await c.shutdown()  # commits offsets
        # The positive fact behind "nothing comes again": the broker holds a committed offset at the end
        # of every queue, so a restarted member starts past everything consumed.
        api = admin.instance.api
        queues = [MessageQueue(topic, "broker-a", q) for q in range(4)]
        for mq in queues:
            committed = await api.query_consumer_offset(broker.broker_addr, group, mq)
            assert committed == await api.get_max_offset(broker.broker_addr, mq), mq
        after = await send_many(producer, topic, "after", 20)
        second = Recorder()
        c2 = consumer(namesrv, group, topic, second)
        await c2.start()
        try:
            await eventually(lambda: after <= set(second.bodies), what="second batch")
        finally:
            await c2.shutdown()
        # Each queue is pulled in order from the committed offset: a "before" message would have come ahead
        # of the "after" ones in its queue.
        assert sorted(second.bodies) == sorted(after), "messages consumed before the restart came again"


async def test_send_back_falls_back_to_resending_through_the_retry_topic(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("Fallback"), unique("FG")
    rec = Recorder()
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=1)
        c = consumer(namesrv, group, topic, rec)
        await c.start()
        try:
            mq = MessageQueue(topic, "broker-a", 0)
            # A commit-log offset the broker does not have: CONSUMER_SEND_MSG_BACK fails, the consumer
            # re-sends the message itself to %RETRY%<group> with a delay level.
            ghost = MessageExt(topic, b"ghost", properties={"UNIQ_KEY": "AB" * 16}, commit_log_offset=10**12)
            assert await c.send_message_back(ghost, 0, mq)
            await eventually(lambda: b"ghost" in rec.bodies, timeout=30, what="the re-sent message")
        finally:
            await c.shutdown()
        delivered = rec.messages[rec.bodies.index(b"ghost")]
        assert delivered.topic == topic  # restored from RETRY_TOPIC
        assert delivered.reconsume_times == 1
        assert delivered.properties.get("ORIGIN_MESSAGE_ID") == "AB" * 16
        assert delivered.properties.get("DELAY") == "3"  # the fallback's level: 3 + reconsumeTimes


async def test_custom_allocation_strategy_covers_every_queue_once(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("Hash"), unique("HG")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=8)
        recs = [Recorder(), Recorder()]
        consumers = [
            consumer(namesrv, group, topic, r, allocate_strategy=AllocateConsistentHash(virtual_nodes=10))
            for r in recs
        ]
        for c in consumers:
            await c.start()
        try:
            await eventually(
                lambda: (
                    sorted(mq.queue_id for c in consumers for mq in c.assigned_queues() if mq.topic == topic)
                    == list(range(8))
                ),
                what="every queue owned exactly once",
            )
            sent = await send_many(producer, topic, "h", 40)
            await eventually(lambda: sent <= set(recs[0].bodies) | set(recs[1].bodies), what="all consumed")
        finally:
            for c in consumers:
                await c.shutdown()
        assert Counter(recs[0].bodies + recs[1].bodies) == Counter(sent)


async def test_subscribe_after_start_and_tag_filtering(namesrv: ServerProcess, broker: ServerProcess) -> None:
    first, second, group = unique("First"), unique("Second"), unique("TG")
    rec = Recorder()
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(first, [broker])
        await admin.create_topic(second, [broker])
        c = consumer(namesrv, group, first, rec)
        await c.start()
        try:
            c.subscribe(second, "red || blue")
            await eventually(
                lambda: any(mq.topic == second for mq in c.assigned_queues()), what="second topic"
            )
            # One queue, green first: once red and blue (behind it) were consumed, green's offset has been
            # passed, so its absence is a fact, not a matter of waiting long enough.
            queue = MessageQueue(second, "broker-a", 0)
            for tag in ("green", "red", "blue"):
                await producer.send(Message.create(second, f"{tag}-msg", tags=tag), queue=queue)
            await eventually(lambda: {b"red-msg", b"blue-msg"} <= set(rec.bodies), what="matching tags")
        finally:
            await c.shutdown()
        assert [b for b in rec.bodies if b.endswith(b"-msg")] == [b"red-msg", b"blue-msg"]


async def test_admin_offset_reset_reaches_the_consumer(namesrv: ServerProcess, broker: ServerProcess) -> None:
    topic, group = unique("Reset"), unique("XG")
    rec = Recorder()
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=2)
        c = consumer(namesrv, group, topic, rec)
        await c.start()
        try:
            sent = await send_many(producer, topic, "r", 10)
            await eventually(lambda: sent <= set(rec.bodies), what="first pass")
            await asyncio.sleep(1.0)  # offsets committed
            # INVOKE_BROKER_TO_RESET_OFFSET with timestamp 0: every queue back to its beginning.
            request = RemotingCommand.request(
                RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                {"topic": topic, "group": group, "timestamp": "0", "isForce": "true"},
            )
            resp = await admin.instance.api.invoke(broker.broker_addr, request, 5.0)
            assert resp.code == 0, resp.remark
            await eventually(
                lambda: Counter(rec.bodies) == Counter(dict.fromkeys(sent, 2)), what="a second pass"
            )
        finally:
            await c.shutdown()


async def test_notify_consumer_ids_changed_rebalances_at_once(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("Notify"), unique("NG")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=4)
        # No periodic rebalance during the test: only the broker's notification can move queues.
        slow = {"rebalance_interval": 3600.0}
        c1 = PushConsumer(group, config=client_config(namesrv, **slow))
        c2 = PushConsumer(group, config=client_config(namesrv, **slow))
        for c in (c1, c2):
            c.subscribe(topic, "*")
            c.register_listener(Recorder())
        await c1.start()
        try:
            await eventually(lambda: owned(c1, topic) == 4, what="c1 owning everything")
            await c2.start()
            await eventually(lambda: owned(c1, topic) == 2 and owned(c2, topic) == 2, timeout=10, what="2/2")
            await c2.shutdown()
            await eventually(lambda: owned(c1, topic) == 4, timeout=10, what="c1 owning everything again")
        finally:
            await c1.shutdown()
            await c2.shutdown()


async def test_orderly_failure_suspends_and_retries_in_place(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("OrderlyRetry"), unique("OR")
    calls: list[tuple[str, int]] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        body = msgs[0].body.decode()
        calls.append((body, msgs[0].reconsume_times))
        if body == "m1" and msgs[0].reconsume_times < 2:
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=1)
        for i in range(4):
            await producer.send(Message.create(topic, f"m{i}"))
        c = PushConsumer(
            group,
            config=client_config(namesrv),
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            suspend_current_queue_time=0.2,
        )
        c.subscribe(topic, "*")
        c.register_orderly_listener(listener)
        await c.start()
        try:
            await eventually(lambda: any(b == "m3" for b, _ in calls), what="the last message")
        finally:
            await c.shutdown()
    # m1 failed twice and was retried in place: nothing after it ran before it succeeded.
    assert calls == [("m0", 0), ("m1", 0), ("m1", 1), ("m1", 2), ("m2", 0), ("m3", 0)]
