"""Failover in a real cluster (two nameservers, two broker groups of master + slave, each a process):
a dead master's queues are read from its slave while producers move to the other group; a hung master
is dropped by the nameservers after the broker expiry; with a nameserver down, clients keep working
from cached routes and the other nameserver serves new clients."""

from __future__ import annotations

import asyncio
from pathlib import Path

from orbitmq.client.aio import Message, Producer, PushConsumer, SendStatus

from .conftest import (
    NAMESRV_CONF,
    Recorder,
    Tool,
    client_config,
    cluster,
    eventually,
    shutdown_quietly,
)

TOPIC = "FailoverTopic"


def consumer_of(namesrv_addrs: list[str], group: str, recorder: Recorder, **options: object) -> PushConsumer:
    c = PushConsumer(
        group,
        config=client_config(namesrv_addrs),
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        **options,  # type: ignore[arg-type]
    )
    c.subscribe(TOPIC, "*")
    c.register_listener(recorder)
    return c


async def test_master_down_consumers_read_the_slave_and_producers_use_the_other_group(tmp_path: Path) -> None:
    with cluster(tmp_path) as c:
        await c.wait_registered()
        tool = Tool(c.namesrv_addrs)
        masters = [c.master("broker-a"), c.master("broker-b")]
        gate = asyncio.Event()
        recorder = Recorder(gate)
        # One message in flight per queue while the gate is shut: the rest stays on the brokers.
        consumer = consumer_of(
            c.namesrv_addrs, "failover-cg", recorder, pull_batch_size=1, pull_threshold_for_queue=1
        )
        producer = Producer("failover-pg", config=client_config(c.namesrv_addrs))
        try:
            await tool.create_topic(TOPIC, masters)
            for b in c.brokers:
                if not b.is_master:
                    await tool.read_topic(b, TOPIC)  # the slaves know the topic (synced from their masters)
            await producer.start()
            before: set[bytes] = set()
            for i in range(80):
                result = await producer.send(Message(TOPIC, b"before-%03d" % i))
                assert result.status is SendStatus.SEND_OK
                before.add(b"before-%03d" % i)
            a_master, a_slave = c.master("broker-a"), c.slave("broker-a")

            async def replicated() -> bool:
                return await tool.max_offsets(a_slave, TOPIC) == await tool.max_offsets(a_master, TOPIC)

            await eventually(replicated, what="broker-a's slave to have everything")
            await consumer.start()
            # It takes every queue and has one delivery per queue parked at the gate; the rest stays on
            # the brokers (pull_threshold_for_queue=1), to be read from broker-a's slave after the kill.
            every_queue = {(b, q) for b in ("broker-a", "broker-b") for q in range(4)}
            await eventually(lambda: recorder.parked == every_queue, what="a parked delivery on every queue")
            a_master.kill()

            # The nameservers drop the dead master (its connections closed) but keep its slave.
            async def dropped() -> bool:
                for ns in c.namesrv_addrs:
                    known = await c.registered_brokers(ns)
                    if known.get("broker-a") != {1: a_slave.address}:
                        return False
                return True

            await eventually(dropped, timeout=10, what="the nameservers to drop broker-a's master")
            # Producers carry on, on broker-b.
            after: set[bytes] = set()
            for i in range(40):
                result = await producer.send(Message(TOPIC, b"after-%03d" % i))
                assert result.status is SendStatus.SEND_OK
                assert result.message_queue.broker_name == "broker-b"
                after.add(b"after-%03d" % i)
            # Consumers carry on: broker-a's queues are read from its slave.
            gate.set()
            await eventually(
                lambda: before | after <= set(recorder.bodies), timeout=30, what="consuming everything"
            )
            # A consumer group that starts now gets its offsets and broker-a's messages from the slave.
            late_recorder = Recorder()
            late = consumer_of(c.namesrv_addrs, "failover-late-cg", late_recorder)
            await late.start()
            await eventually(
                lambda: before | after <= set(late_recorder.bodies), timeout=30, what="a late consumer"
            )
            await shutdown_quietly(late)
        finally:
            await shutdown_quietly(consumer)
            await shutdown_quietly(producer)
            await tool.close()


async def test_hung_master_is_dropped_after_the_broker_expiry(tmp_path: Path) -> None:
    # Brokers register every 10 s (the shortest period), so live brokers survive a 12 s expiry.
    namesrv_conf = {**NAMESRV_CONF, "brokerChannelExpiredTime": 12000}
    with cluster(tmp_path, namesrvs=1, slaves=0, namesrv_conf=namesrv_conf) as c:
        await c.wait_registered()
        tool = Tool(c.namesrv_addrs)
        producer = Producer("expiry-pg", config=client_config(c.namesrv_addrs), send_timeout=1.0)
        hung = c.master("broker-a")
        try:
            await tool.create_topic(TOPIC, [c.master("broker-a"), c.master("broker-b")])
            await producer.start()
            await producer.send(Message(TOPIC, b"warm-up"))
            hung.pause()  # SIGSTOP: its sockets stay open, so only the expiry can tell
            loop = asyncio.get_running_loop()
            paused_at = loop.time()

            async def expired() -> bool:
                return "broker-a" not in await c.registered_brokers(c.namesrv_addrs[0])

            await eventually(expired, timeout=20, what="broker-a to expire")
            assert loop.time() - paused_at >= 5  # dropped by the expiry scan, not by a closed connection
            assert "broker-b" in await c.registered_brokers(c.namesrv_addrs[0])

            async def routed_to_b_only() -> bool:
                queues = await producer.fetch_publish_message_queues(TOPIC)
                return {mq.broker_name for mq in queues} == {"broker-b"}

            await eventually(routed_to_b_only, timeout=10, what="the producer's route to drop broker-a")
            for i in range(20):  # now every send goes to broker-b
                result = await producer.send(Message(TOPIC, b"after-expiry-%02d" % i))
                assert result.message_queue.broker_name == "broker-b"
        finally:
            hung.resume()
            await shutdown_quietly(producer)
            await tool.close()


async def test_nameserver_down_clients_use_cached_routes_and_the_other_nameserver(tmp_path: Path) -> None:
    with cluster(tmp_path, slaves=0) as c:
        await c.wait_registered()
        tool = Tool(c.namesrv_addrs)
        recorder = Recorder()
        consumer = consumer_of(c.namesrv_addrs, "ns-down-cg", recorder)
        producer = Producer("ns-down-pg", config=client_config(c.namesrv_addrs))
        newcomer = Producer("ns-down-new", config=client_config(c.namesrv_addrs))
        sent: set[bytes] = set()

        async def send(p: Producer, body: bytes) -> None:
            result = await p.send(Message(TOPIC, body))
            assert result.status is SendStatus.SEND_OK
            sent.add(body)

        try:
            await tool.create_topic(TOPIC, [c.master("broker-a"), c.master("broker-b")])
            await producer.start()
            await consumer.start()
            for i in range(20):
                await send(producer, b"start-%02d" % i)
            await eventually(lambda: sent <= set(recorder.bodies), what="consuming the first messages")
            first, second = c.nameservers
            first.kill()
            # A new client given both addresses fails over to the second nameserver for its routes.
            await newcomer.start()
            for i in range(20):
                await send(newcomer, b"newcomer-%02d" % i)
            assert {mq.broker_name for mq in await newcomer.fetch_publish_message_queues(TOPIC)} == {
                "broker-a",
                "broker-b",
            }
            second.kill()
            # No nameserver at all: the running clients keep going on the routes they cached.
            await asyncio.sleep(1.5)  # several route refreshes fail meanwhile
            brokers_used: set[str] = set()
            for i in range(40):
                result = await producer.send(Message(TOPIC, b"cached-%02d" % i))
                assert result.status is SendStatus.SEND_OK
                brokers_used.add(result.message_queue.broker_name)
                sent.add(b"cached-%02d" % i)
            assert brokers_used == {"broker-a", "broker-b"}
            await eventually(lambda: sent <= set(recorder.bodies), what="consuming with no nameserver")
        finally:
            await shutdown_quietly(consumer)
            await shutdown_quietly(producer)
            await shutdown_quietly(newcomer)
            await tool.close()
