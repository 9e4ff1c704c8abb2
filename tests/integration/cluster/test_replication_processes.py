"""Replication between real broker processes: SYNC_MASTER loses nothing it acknowledged when the master
is killed with SIGKILL mid-stream; an ASYNC_MASTER's slave that was stopped catches up to a
byte-identical commit log after its restart; a slave refuses writes and serves reads."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path

import orjson

from orbitmq.client.aio import Message, MessageQueue, Producer, PushConsumer, SendStatus
from orbitmq.client.api import FLAG_SUBSCRIPTION
from orbitmq.common.errors import OrbitError
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.cluster import BrokerNode

from .conftest import (
    BROKER_CONF,
    Recorder,
    Tool,
    client_config,
    cluster,
    commit_log_files,
    eventually,
    shutdown_quietly,
)

SENDERS = 4


async def test_sync_master_killed_mid_stream_loses_nothing_acknowledged(tmp_path: Path) -> None:
    with cluster(tmp_path, groups=1, slaves=1, namesrvs=1, master_role="SYNC_MASTER") as c:
        await c.wait_registered()
        master, slave = c.master("broker-a"), c.slave("broker-a")
        tool = Tool(c.namesrv_addrs)
        producer = Producer("sync-pg", config=client_config(c.namesrv_addrs), send_timeout=2.0, retry_times=0)
        recorder = Recorder()
        consumer = PushConsumer(
            "sync-cg", config=client_config(c.namesrv_addrs), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        consumer.subscribe("SyncTopic", "*")
        consumer.register_listener(recorder)
        try:
            await tool.create_topic("SyncTopic", [master])
            await producer.start()

            async def slave_attached() -> bool:  # SLAVE_NOT_AVAILABLE until the slave's HA link is up
                result = await producer.send(Message("SyncTopic", b"probe"))
                return result.status is SendStatus.SEND_OK

            await eventually(slave_attached, what="the slave to connect to the master's HA port")
            # The slave copies topic configs from its master every 10 s (first after 3 s): a topic created
            # just before the master dies would be unknown to it, as in RocketMQ.
            await tool.read_topic(slave, "SyncTopic")
            await consumer.start()
            acked: set[bytes] = {b"probe"}
            not_ok: list[SendStatus] = []

            async def sender(k: int) -> None:
                for i in range(100_000):
                    body = b"%d-%06d-" % (k, i) + b"x" * 1000
                    try:
                        result = await producer.send(Message("SyncTopic", body))
                    except OrbitError:
                        return  # the master is gone
                    if result.status is SendStatus.SEND_OK:
                        acked.add(body)
                    else:
                        not_ok.append(result.status)

            senders = [asyncio.create_task(sender(k)) for k in range(SENDERS)]
            await eventually(lambda: len(acked) >= 400, what="400 acknowledged sends")
            master.kill()  # SIGKILL while four senders have requests in flight
            await asyncio.wait_for(asyncio.gather(*senders), 30)
            assert master.process is not None and master.process.returncode == -9
            # Every acknowledged message is in the slave's log ...
            on_slave = await tool.read_topic(slave, "SyncTopic")
            missing = acked - {m.body for m in on_slave}
            assert not missing, f"{len(missing)} acknowledged messages are not on the slave"
            # ... and the consumer, which was reading from the master, gets every one of them from the slave.
            await eventually(
                lambda: acked <= set(recorder.bodies), timeout=30, what="consuming from the slave"
            )
            assert not_ok == []  # with the slave attached, every stored message was SEND_OK
        finally:
            await shutdown_quietly(consumer)
            await shutdown_quietly(producer)
            await tool.close()


async def test_async_slave_catches_up_after_restart_byte_for_byte(tmp_path: Path) -> None:
    with cluster(tmp_path, groups=1, slaves=1, namesrvs=1) as c:
        await c.wait_registered()
        master, slave = c.master("broker-a"), c.slave("broker-a")
        tool = Tool(c.namesrv_addrs)
        producer = Producer("async-pg", config=client_config(c.namesrv_addrs))
        try:
            await tool.create_topic("AsyncTopic", [master])
            await producer.start()
            for i in range(200):
                result = await producer.send(Message("AsyncTopic", b"before-%04d" % i))
                assert result.status is SendStatus.SEND_OK  # ASYNC_MASTER answers without waiting
            slave.stop()
            for i in range(1200):  # ~1.2 MB: the log rolls into its second 1 MiB segment meanwhile
                result = await producer.send(Message("AsyncTopic", b"while-away-%04d-" % i + b"y" * 900))
                assert result.status is SendStatus.SEND_OK
            slave.start()
            await eventually(
                lambda: commit_log_files(slave) == commit_log_files(master),
                timeout=30,
                what="a byte-identical commit log on the restarted slave",
            )
            assert len(commit_log_files(slave)) >= 2  # the copy spans a segment roll
            # The slave serves what it copied, and refuses writes.
            await eventually(
                lambda: _count_on(tool, slave, 1400), timeout=20, what="the slave serving every message"
            )
            refused = await tool.instance.remoting.invoke(
                slave.address,
                RemotingCommand.request(
                    RequestCode.SEND_MESSAGE_V2,
                    {
                        "a": "pg",
                        "b": "AsyncTopic",
                        "c": "TBW102",
                        "d": "4",
                        "e": "0",
                        "f": "0",
                        "g": "0",
                        "h": "0",
                        "i": "",
                        "j": "0",
                        "k": "false",
                        "m": "false",
                    },
                    b"to-the-slave",
                ),
                5.0,
            )
            assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
            end = RemotingCommand.request(
                RequestCode.END_TRANSACTION,
                {
                    "producerGroup": "pg",
                    "tranStateTableOffset": "0",
                    "commitLogOffset": "0",
                    "commitOrRollback": "8",
                    "msgId": "x",
                },
            )
            refused = await tool.instance.remoting.invoke(slave.address, end, 5.0)
            assert refused.code == ResponseCode.SLAVE_NOT_AVAILABLE
        finally:
            await producer.shutdown()
            await tool.close()


async def _count_on(tool: Tool, broker: BrokerNode, expected: int) -> bool:
    return len(await tool.read_topic(broker, "AsyncTopic")) == expected


async def test_master_behind_in_memory_sends_consumers_to_the_slave(tmp_path: Path) -> None:
    # accessMessageInMemoryMaxRatio=0: any backlog counts as "no longer in memory" on the master.
    conf = {**BROKER_CONF, "slaveReadEnable": True, "accessMessageInMemoryMaxRatio": 0}
    with cluster(tmp_path, groups=1, slaves=1, namesrvs=1, broker_conf=conf) as c:
        await c.wait_registered()
        master, slave = c.master("broker-a"), c.slave("broker-a")
        tool = Tool(c.namesrv_addrs)
        producer = Producer("slow-pg", config=client_config(c.namesrv_addrs))
        recorder = Recorder()
        consumer = PushConsumer(
            "slow-cg", config=client_config(c.namesrv_addrs), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        consumer.subscribe("SlowTopic", "*")
        consumer.register_listener(recorder)
        try:
            await tool.create_topic("SlowTopic", [master])
            await tool.read_topic(slave, "SlowTopic")
            await producer.start()
            sent = {b"slow-%04d" % i for i in range(300)}
            for body in sorted(sent):
                await producer.send(Message("SlowTopic", body))

            async def replicated() -> bool:
                return await tool.max_offsets(slave, "SlowTopic") == await tool.max_offsets(
                    master, "SlowTopic"
                )

            await eventually(replicated, what="the slave to have everything")
            first = await tool.api.pull_message(
                master.address,
                group="slow-cg",
                mq=MessageQueue("SlowTopic", "broker-a", 0),
                offset=0,
                max_nums=4,
                sys_flag=FLAG_SUBSCRIPTION,
                commit_offset=0,
                suspend_timeout_ms=0,
                subscription="*",
                sub_version=0,
                expression_type="TAG",
                timeout=5.0,
            )
            assert first.suggest_which_broker_id == 1  # whichBrokerWhenConsumeSlowly
            served_before = await transferred(tool, slave)
            await consumer.start()
            await eventually(lambda: sent <= set(recorder.bodies), what="consuming the backlog")
            # The consumer followed the suggestion: most of the backlog came from the slave.
            assert await transferred(tool, slave) - served_before >= 200
        finally:
            await shutdown_quietly(consumer)
            await shutdown_quietly(producer)
            await tool.close()


async def transferred(tool: Tool, broker: BrokerNode) -> int:
    """Messages the broker has served to pulls (getMessageTransferedMsgCount of its runtime info)."""
    response = await tool.instance.remoting.invoke(
        broker.address, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5.0
    )
    assert response.code == ResponseCode.SUCCESS
    return int(orjson.loads(response.body_bytes())["table"]["getMessageTransferedMsgCount"])


async def test_sync_master_reports_a_hung_or_missing_slave(tmp_path: Path) -> None:
    conf = {**BROKER_CONF, "slaveTimeout": 800}
    with cluster(tmp_path, groups=1, slaves=1, namesrvs=1, master_role="SYNC_MASTER", broker_conf=conf) as c:
        await c.wait_registered()
        master, slave = c.master("broker-a"), c.slave("broker-a")
        tool = Tool(c.namesrv_addrs)
        producer = Producer("hung-pg", config=client_config(c.namesrv_addrs), retry_times=0)
        try:
            await tool.create_topic("HungTopic", [master])
            await producer.start()

            async def status() -> SendStatus:
                return (await producer.send(Message("HungTopic", b"m"))).status

            async def ok() -> bool:
                return await status() is SendStatus.SEND_OK

            await eventually(ok, what="the slave to attach")
            slave.pause()  # connected but silent: the master waits slaveTimeout, then gives up
            loop = asyncio.get_running_loop()
            began = loop.time()
            assert await status() is SendStatus.FLUSH_SLAVE_TIMEOUT
            assert loop.time() - began >= 0.7
            slave.kill()  # no slave at all
            await eventually(
                lambda: _is(status(), SendStatus.SLAVE_NOT_AVAILABLE), what="SLAVE_NOT_AVAILABLE"
            )
            slave.start()  # back from its own log: it resumes where it stopped
            await eventually(ok, timeout=20, what="the restarted slave to attach again")
            await eventually(
                lambda: _same_max_offsets(tool, master, slave, "HungTopic"), what="the slave to catch up"
            )
        finally:
            await shutdown_quietly(producer)
            await tool.close()


async def _is(value: Awaitable[SendStatus], expected: SendStatus) -> bool:
    return await value is expected


async def _same_max_offsets(tool: Tool, a: BrokerNode, b: BrokerNode, topic: str) -> bool:
    return await tool.max_offsets(a, topic) == await tool.max_offsets(b, topic)
