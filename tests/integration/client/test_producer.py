"""Producer against a real name server and broker: every send mode, batches, ordered sends,
compression, and validation before anything is sent."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

import pytest

from orbitmq.client.aio import Message, Producer, SendStatus
from orbitmq.common.errors import BrokerError, ClientError
from orbitmq.testing import ServerProcess, start_broker

from .conftest import Admin, broker_conf, client_config, eventually, unique


async def test_sync_async_oneway_and_batch_sends(namesrv: ServerProcess, broker: ServerProcess) -> None:
    topic = unique("SendModes")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker])
        result = await producer.send(Message.create(topic, "sync", tags="TagA", keys=["k1", "k2"]))
        assert result.status is SendStatus.SEND_OK
        assert len(result.msg_id) == 32 and len(result.offset_msg_id) == 32
        assert result.message_queue.topic == topic and result.queue_offset >= 0

        task = producer.send_async(Message.create(topic, "async"))
        async_result = await task
        assert async_result.status is SendStatus.SEND_OK
        window = [producer.send_async(Message.create(topic, f"w{i}")) for i in range(20)]
        assert len(producer.path.pending) == 20  # tracked until done (shutdown waits for them)
        await asyncio.gather(*window)
        assert not producer.path.pending  # and forgotten once done

        await producer.send_oneway(Message.create(topic, "oneway"))

        batch = [Message.create(topic, f"batch-{i}") for i in range(10)]
        batch_result = await producer.send_batch(batch)
        assert batch_result.status is SendStatus.SEND_OK
        assert batch_result.msg_id.split(",") == [m.unique_id for m in batch]
        assert len(batch_result.offset_msg_id.split(",")) == 10

        big = Message.create(topic, b"z" * 10000, tags="big")  # compressed on the wire
        await producer.send(big)

        async def all_stored() -> bool:
            return len(await admin.read_topic(topic)) == 34  # 14 + the window of 20

        await eventually(all_stored, what="34 stored messages")
        stored = await admin.read_topic(topic)
        bodies = {m.body for m in stored}
        assert {b"sync", b"async", b"oneway", b"z" * 10000} <= bodies
        assert {f"batch-{i}".encode() for i in range(10)} <= bodies
        by_body = {m.body: m for m in stored}
        assert by_body[b"sync"].tags == "TagA" and by_body[b"sync"].keys == "k1 k2"
        assert by_body[b"sync"].msg_id == result.msg_id
        # A batch lands in one queue with consecutive offsets.
        batch_stored = sorted(
            (m for m in stored if m.body.startswith(b"batch-")), key=lambda m: m.queue_offset
        )
        assert len({m.queue_id for m in batch_stored}) == 1
        offsets = [m.queue_offset for m in batch_stored]
        assert offsets == list(range(offsets[0], offsets[0] + 10)) and offsets[0] == batch_result.queue_offset


async def test_ordered_sends_keep_each_key_in_one_queue_in_order(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic = unique("Ordered")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker], queues=8)
        for i in range(60):
            key = f"order-{i % 5}"
            await producer.send_orderly(Message.create(topic, f"{key}:{i}", keys=key), key)
        stored = await admin.read_topic(topic)
        assert len(stored) == 60
        queues: dict[str, set[int]] = defaultdict(set)
        sequences: dict[str, list[int]] = defaultdict(list)
        for msg in sorted(stored, key=lambda m: (m.queue_id, m.queue_offset)):
            key, seq = msg.body.decode().split(":")
            queues[key].add(msg.queue_id)
            sequences[key].append(int(seq))
        assert all(len(q) == 1 for q in queues.values())
        assert all(seq == sorted(seq) for seq in sequences.values())


async def test_unknown_topic_without_auto_create_is_a_clear_error(
    tmp_path: Path, namesrv: ServerProcess
) -> None:
    """With autoCreateTopicEnable=false nobody registers TBW102, so the producer finds no route and says
    so (TOPIC_NOT_EXIST, RocketMQ's "No route info of this topic"); the broker creates nothing."""
    topic = unique("NoSuchTopic")
    with start_broker(
        tmp_path,
        namesrv.address,
        broker_name="broker-n",
        expect=("broker",),
        autoCreateTopicEnable=False,
        **broker_conf(),
    ):
        async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
            with pytest.raises(BrokerError) as caught:
                await producer.send(Message.create(topic, "x"))
            assert caught.value.code == 17  # TOPIC_NOT_EXIST
            assert topic in str(caught.value)
            assert await admin.instance.api.get_topic_route(topic) is None


async def test_unknown_topic_with_auto_create_is_created_from_the_default_topic(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    """The other side of the switch: the fixture broker (autoCreateTopicEnable defaults to true) creates
    the topic from TBW102 on first send."""
    topic = unique("AutoTopic")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        result = await producer.send(Message.create(topic, "x"))
        assert result.status is SendStatus.SEND_OK

        async def routed() -> bool:  # the broker registers the created topic with the name server
            return await admin.instance.api.get_topic_route(topic) is not None

        await eventually(routed, what=f"a route for {topic}")
        assert [m.body for m in await admin.read_topic(topic)] == [b"x"]


async def test_validation_happens_before_sending(namesrv: ServerProcess, broker: ServerProcess) -> None:
    async with Producer("PG", config=client_config(namesrv)) as producer:
        with pytest.raises(ClientError):
            await producer.send(Message("T", b""))
        with pytest.raises(ClientError):
            await producer.send_batch([Message("T1", b"a"), Message("T2", b"b")])
        with pytest.raises(ClientError):
            await producer.send_batch([Message.create("T", "a", delay_level=1)])
        assert producer.path.publish_info == {}  # nothing was even looked up


async def test_send_timeout_budget_is_respected(namesrv: ServerProcess, broker: ServerProcess) -> None:
    topic = unique("Budget")
    async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
        await admin.create_topic(topic, [broker])
        with pytest.raises((TimeoutError, asyncio.TimeoutError)):
            await producer.send(Message.create(topic, "x"), timeout=0.0)
        assert (await producer.send(Message.create(topic, "y"))).status is SendStatus.SEND_OK


async def test_stored_but_not_ok_status_is_returned_as_is(tmp_path: Path, namesrv: ServerProcess) -> None:
    """A SYNC_MASTER without a slave stores the message but answers SLAVE_NOT_AVAILABLE (fact sheet 3.2):
    the producer returns that status; it is neither an error nor retried elsewhere."""
    topic = unique("SyncMaster")
    with start_broker(
        tmp_path,
        namesrv.address,
        broker_name="broker-s",
        role="SYNC_MASTER",
        expect=("broker",),
        **broker_conf(),
    ) as sync_master:
        async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
            await admin.create_topic(topic, [sync_master])
            result = await producer.send(Message.create(topic, "x"))
            assert result.status is SendStatus.SLAVE_NOT_AVAILABLE
            assert [m.body for m in await admin.read_topic(topic)] == [b"x"]
