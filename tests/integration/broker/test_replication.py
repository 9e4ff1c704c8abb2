"""Master/slave wiring in the broker: the master's HA listener, a slave replicating the commit log and
syncing topics/offsets from the master, and SYNC_MASTER sends (SLAVE_NOT_AVAILABLE without a slave)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.testing.launch import start_broker, start_namesrv
from orbitmq.transport import RemotingClient

from .conftest import Raw, messages

SMALL = {"mappedFileSizeCommitLog": 4 * 1024 * 1024}


async def eventually_pull(raw: Raw, topic: str, count: int, timeout: float = 10.0) -> list[bytes]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    bodies: list[bytes] = []
    while loop.time() < deadline:
        response = await raw.pull(topic, 0, 0)
        if response.code == ResponseCode.SUCCESS:
            bodies = [m.body for m in messages(response)]
            if len(bodies) >= count:
                return bodies
        await asyncio.sleep(0.2)
    return bodies


async def test_sync_master_replicates_to_slave(tmp_path: Path, client: RemotingClient) -> None:
    with start_namesrv(tmp_path) as namesrv:
        master = start_broker(tmp_path, namesrv.address, role="SYNC_MASTER", **SMALL)
        with master:
            for _ in range(50):  # `broker NAME ha listening on ...` follows the broker line
                if "ha" in master.addresses:
                    break
                await asyncio.sleep(0.05)
            assert master.addresses["ha"] != master.broker_addr
            raw_master = Raw(client, master.broker_addr, namesrv.address)
            await raw_master.create_topic("Replicated", queues=1)
            lonely = await raw_master.send("Replicated", b"before-slave")
            assert lonely.code == ResponseCode.SLAVE_NOT_AVAILABLE  # stored, but no slave has it
            with start_broker(tmp_path, namesrv.address, broker_id=1, expect=("broker",), **SMALL) as slave:
                raw_slave = Raw(client, slave.broker_addr, namesrv.address)
                codes = []
                for i in range(5):
                    for _ in range(50):  # until the slave has connected to the HA port
                        response = await raw_master.send("Replicated", b"synced-%d" % i)
                        if response.code == ResponseCode.SUCCESS:
                            break
                        await asyncio.sleep(0.1)
                    codes.append(response.code)
                assert codes == [ResponseCode.SUCCESS] * 5
                await raw_master.call(
                    RequestCode.UPDATE_CONSUMER_OFFSET,
                    {"consumerGroup": "rg", "topic": "Replicated", "queueId": "0", "commitOffset": "2"},
                )
                # The slave serves the replicated log once it has synced the topic config (first after 3 s).
                bodies = await eventually_pull(raw_slave, "Replicated", 6)
                assert bodies[0] == b"before-slave" and bodies[-1] == b"synced-4"
                refused = await raw_slave.send("Replicated", b"to-slave")
                assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
                query = {"consumerGroup": "rg", "topic": "Replicated", "queueId": "0"}
                for _ in range(100):
                    synced = await raw_slave.call(RequestCode.QUERY_CONSUMER_OFFSET, query)
                    if synced.ext_fields.get("offset") == "2":
                        break
                    await asyncio.sleep(0.2)
                assert synced.ext_fields.get("offset") == "2"


async def test_a_slave_started_before_its_master_finds_it_without_waiting_a_registration_period(
    tmp_path: Path, client: RemotingClient
) -> None:
    """The slave's first registration finds no master; it registers again every second until it learns
    the master's HA address, instead of after the 30 s registration period (registerNameServerPeriod)."""
    with (
        start_namesrv(tmp_path) as namesrv,
        start_broker(tmp_path, namesrv.address, broker_id=1, expect=("broker",), **SMALL) as slave,
    ):
        await asyncio.sleep(0.5)  # the slave has registered alone
        master = start_broker(tmp_path, namesrv.address, role="ASYNC_MASTER", **SMALL)
        with master:
            raw_master = Raw(client, master.broker_addr, namesrv.address)
            await raw_master.create_topic("SlaveFirst", queues=1)
            assert (await raw_master.send("SlaveFirst", b"early")).code == ResponseCode.SUCCESS
            raw_slave = Raw(client, slave.broker_addr, namesrv.address)
            # well below the 30 s period: only the quick re-registration can make it in time
            assert await eventually_pull(raw_slave, "SlaveFirst", 1, timeout=20.0) == [b"early"]
