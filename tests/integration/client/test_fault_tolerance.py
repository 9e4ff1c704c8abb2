"""Two brokers, one stopped mid-send: sends go on to the other with no error surfaced, the failed
broker stays isolated while its window lasts (even once it is back in the route), and is tried again
once the window has passed. Also several name servers with one dead, and a name server outage served
from cached routes."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from orbitmq.client.aio import Message, Producer, SendStatus
from orbitmq.common.clock import SYSTEM_CLOCK
from orbitmq.testing import ServerProcess, start_broker, start_namesrv

from .conftest import Admin, broker_conf, client_config, eventually, unique


class SkipAheadClock:
    """The real clocks plus an offset the test moves. The isolation window is then the default 10
    minutes and ends when the test skips ahead, not when a busy box happens to be slow: with a short
    real window (3 s) the 30 sends after the stop sometimes outlasted it, and the check that broker-b
    was still isolated failed."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now_ms(self) -> int:
        return SYSTEM_CLOCK.now_ms() + int(self.offset * 1000)

    def monotonic(self) -> float:
        return SYSTEM_CLOCK.monotonic() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


async def test_stopped_broker_is_avoided_then_tried_again(
    tmp_path: Path, namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic = unique("Fault")
    broker_b = start_broker(
        tmp_path, namesrv.address, broker_name="broker-b", expect=("broker",), **broker_conf()
    )
    clock = SkipAheadClock()
    try:
        async with Admin(namesrv) as admin:
            await admin.create_topic(topic, [broker, broker_b])
            producer = Producer(
                "PG",
                # the test refreshes the route itself, at known points (the poll task is cancelled below)
                config=client_config(namesrv, poll_namesrv_interval=3600.0),
                send_latency_fault_enable=True,  # default tables: a failed broker is isolated 10 min
                send_timeout=5.0,
                clock=clock,
            )
            async with producer:
                # No route poll at all: its first run comes 10 ms after start (as in RocketMQ) and, on a
                # busy box, could land after broker-b's stop and drop it from the route before any send
                # tried it (then nothing fails on it and nothing is isolated: the flake this test had).
                assert producer.instance is not None
                for task in producer.instance._tasks:
                    if task.get_name().endswith(" routes"):
                        task.cancel()
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
                assert not producer.path.fault.tolerance.is_available("broker-b")  # a send failed on it

                # broker-b comes back (new port, same name) and is in the route again, but its window
                # has not passed: sends keep away from it.
                broker_b = start_broker(
                    tmp_path, namesrv.address, broker_name="broker-b", expect=("broker",), **broker_conf()
                )
                await admin.create_topic(topic, [broker, broker_b])
                assert producer.instance is not None

                async def b_in_route() -> bool:
                    assert producer.instance is not None
                    await producer.instance.update_topic_route(topic)
                    queues = producer.path.publish_info[topic].message_queues
                    return any(mq.broker_name == "broker-b" for mq in queues)

                await eventually(b_in_route, what="broker-b back in the route")
                isolated = [
                    (await producer.send(Message.create(topic, f"c{i}"))).message_queue.broker_name
                    for i in range(20)
                ]
                assert set(isolated) == {"broker-a"}

                # Past the window, broker-b is picked again (the positive control of the line above).
                clock.advance(10 * 60 + 1)
                assert producer.path.fault.tolerance.is_available("broker-b")
                used: set[str] = set()

                async def b_used_again() -> bool:
                    used.add((await producer.send(Message.create(topic, "d"))).message_queue.broker_name)
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
