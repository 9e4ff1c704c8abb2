"""Two brokers, one stopped mid-send: sends go on to the other with no error surfaced, and the
isolated broker is tried again once its (shortened) window has passed. Also several name servers
with one dead, and a name server outage served from cached routes."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from orbitmq.client.aio import Message, Producer, SendStatus
from orbitmq.testing import ServerProcess, start_broker, start_namesrv

from .conftest import Admin, broker_conf, client_config, eventually, unique


async def test_stopped_broker_is_avoided_then_tried_again(
    tmp_path: Path, namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic = unique("Fault")
    broker_b = start_broker(
        tmp_path, namesrv.address, broker_name="broker-b", expect=("broker",), **broker_conf()
    )
    try:
        async with Admin(namesrv) as admin:
            await admin.create_topic(topic, [broker, broker_b])
            producer = Producer(
                "PG",
                config=client_config(namesrv),
                send_latency_fault_enable=True,
                latency_max=(0, 550),
                not_available_durations=(0, 3000),  # isolation: 3 s instead of 10 min
                send_timeout=5.0,
            )
            async with producer:
                before: Counter[str] = Counter()
                for i in range(20):
                    before[
                        (await producer.send(Message.create(topic, f"a{i}"))).message_queue.broker_name
                    ] += 1
                assert set(before) == {"broker-a", "broker-b"}

                broker_b.stop()
                after = []
                for i in range(30):  # no exception may surface
                    result = await producer.send(Message.create(topic, f"b{i}"))
                    assert result.status is SendStatus.SEND_OK
                    after.append(result.message_queue.broker_name)
                assert after.count("broker-a") == 30
                assert not producer.fault.tolerance.is_available("broker-b")

                # broker-b comes back (new port, same name) and is used again after its window.
                broker_b = start_broker(
                    tmp_path, namesrv.address, broker_name="broker-b", expect=("broker",), **broker_conf()
                )
                await admin.create_topic(topic, [broker, broker_b])
                assert producer.instance is not None
                await eventually(
                    lambda: producer.instance.update_topic_route(topic),
                    what="a fresh route",  # type: ignore[union-attr]
                )
                await eventually(lambda: producer.fault.tolerance.is_available("broker-b"), timeout=10)
                used: set[str] = set()

                async def b_used_again() -> bool:
                    used.add((await producer.send(Message.create(topic, "c"))).message_queue.broker_name)
                    return "broker-b" in used

                await eventually(b_used_again, what="broker-b picked again")
    finally:
        broker_b.stop()


async def test_several_name_servers_and_cached_routes(
    tmp_path: Path, broker: ServerProcess, namesrv: ServerProcess
) -> None:
    topic = unique("Namesrv")
    dead = start_namesrv(tmp_path, name="dead-namesrv")
    dead_addr = dead.address
    dead.stop()
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker])
    cfg = client_config(namesrv)
    cfg.namesrv_addrs = [dead_addr, namesrv.address]  # the first one is down: fail over
    async with Producer("PG", config=cfg) as producer:
        assert (await producer.send(Message.create(topic, "x"))).status is SendStatus.SEND_OK
        namesrv.stop()  # the name server goes away; cached routes keep the producer working
        assert producer.instance is not None
        assert not await producer.instance.update_topic_route(topic)
        for i in range(5):
            assert (await producer.send(Message.create(topic, f"y{i}"))).status is SendStatus.SEND_OK
        await asyncio.sleep(0)
