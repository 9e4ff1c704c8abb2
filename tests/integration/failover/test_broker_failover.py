"""Brokers in controller mode: ids and roles from the controller, the SyncStateSet kept by the master, and
an election after kill -9 of the master under a steady producer, with nothing acknowledged lost."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from orbitmq.client.aio import Message, Producer, SendStatus
from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.message.model import MessageQueue
from orbitmq.protocol import java_json
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.replication.epoch_file import FILE_NAME, EpochFile
from orbitmq.testing.drain import drain_queue
from orbitmq.testing.launch import start_broker, start_namesrv
from orbitmq.testing.process import ServerProcess
from orbitmq.transport.client import RemotingClient

from .conftest import eventually, leader_of, needs_raft, replica_info

TOPIC = "FailoverTopic"
QUEUES = 4
BROKER_CONF: dict[str, Any] = {
    "enableControllerMode": True,
    "allAckInSyncStateSet": True,
    "controllerHeartBeatTimeoutMills": 3000,
    "checkSyncStateSetPeriod": 500,
    "haMaxTimeSlaveNotCatchup": 3000,
    "haSendHeartbeatInterval": 500,
    "brokerHeartbeatInterval": 500,
    "mappedFileSizeCommitLog": 1024 * 1024,
}


def client_config(namesrv: str) -> ClientConfig:
    return ClientConfig(namesrv_addrs=[namesrv], poll_namesrv_interval=0.5, heartbeat_interval=1.0)


def start_group(tmp_path: Path, n: int, **extra: Any) -> tuple[ServerProcess, list[ServerProcess]]:
    """A nameserver embedding the controller, and `n` brokers of broker-a in controller mode. The scan
    interval stays at its 10 s default: a silent master is found when its heartbeat timeout passes."""
    namesrv = start_namesrv(
        tmp_path, enableControllerInNamesrv=True, controllerStorePath=tmp_path / "controller"
    )
    brokers = []
    for i in range(n):
        conf = {**BROKER_CONF, "controllerAddr": namesrv.address, **extra}
        # brokerId/brokerRole in the conf are ignored: the controller assigns them.
        brokers.append(start_broker(tmp_path, namesrv.address, broker_id=i, role="SLAVE", **conf))
    return namesrv, brokers


async def group_info(namesrv: ServerProcess) -> dict[str, Any]:
    client = RemotingClient(name="test")
    try:
        return await replica_info(client, [namesrv.address], "broker-a")
    finally:
        await client.close()


async def test_brokers_take_ids_and_roles_and_the_sync_state_set_follows_the_slaves(tmp_path: Path) -> None:
    namesrv, brokers = start_group(tmp_path, 2)
    try:
        info = await eventually(
            lambda: _with(group_info(namesrv), lambda i: i.get("syncStateSet") == [1, 2]),
            what="both replicas in the SyncStateSet",
        )
        assert info["masterBrokerId"] == "1" and info["masterAddress"] == brokers[0].broker_addr
        assert "are ignored" in (tmp_path / "broker-broker-a-1.err").read_text()
        # The master's epoch file beside its log: epoch 1 from offset 0.
        assert EpochFile(tmp_path / "store-broker-a-0" / FILE_NAME).entries == [(1, 0)]
        # The slave stops: the master drops it from the SyncStateSet after haMaxTimeSlaveNotCatchup.
        brokers[1].stop()
        await eventually(
            lambda: _with(group_info(namesrv), lambda i: i.get("syncStateSet") == [1]),
            what="the stopped slave leaving the SyncStateSet",
        )
        # Restarted, it keeps its id, catches up and rejoins.
        brokers[1] = start_broker(
            tmp_path,
            namesrv.address,
            broker_id=1,
            role="SLAVE",
            **{**BROKER_CONF, "controllerAddr": namesrv.address},
        )
        await eventually(
            lambda: _with(group_info(namesrv), lambda i: i.get("syncStateSet") == [1, 2]),
            what="the restarted slave rejoining",
        )
    finally:
        for p in [*brokers, namesrv]:
            p.stop()


async def max_phy_offset(broker_addr: str) -> int:
    client = RemotingClient(name="test")
    try:
        request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        answer = await client.invoke(broker_addr, request, 5.0)
        return int(orjson.loads(answer.body_bytes())["table"]["commitLogMaxOffset"])
    finally:
        await client.close()


def commit_log(store: Path, end: int) -> bytes:
    """The commit log's first `end` bytes, read from its segment files."""
    out = bytearray()
    for name in sorted(os.listdir(store / "commitlog")):
        out += (store / "commitlog" / name).read_bytes()
    assert len(out) >= end
    return bytes(out[:end])


async def _with(info: Any, predicate: Any) -> Any:
    value = await info
    return value if predicate(value) else None


@pytest.mark.parametrize("fault", ["kill -9", "SIGSTOP"])
async def test_master_fails_under_load_the_slave_is_elected_and_no_ack_is_lost(
    tmp_path: Path, fault: str
) -> None:
    """kill -9: the controller sees the master's connection close; SIGSTOP: its heartbeats lapse
    (controllerHeartBeatTimeoutMills). Either way the slave is elected, nothing acknowledged is lost, and
    the old master (restarted, or woken by SIGCONT) learns it is a slave, cuts any unreplicated tail and
    catches up."""
    namesrv, brokers = start_group(tmp_path, 2)
    old_master, slave = brokers
    instance = ClientInstance(client_config(namesrv.address))
    producer = Producer("failover-pg", config=client_config(namesrv.address), send_timeout=2.0)
    acked: set[bytes] = set()
    failed = 0
    try:
        await eventually(
            lambda: _with(group_info(namesrv), lambda i: i.get("syncStateSet") == [1, 2]),
            what="both replicas in the SyncStateSet",
        )
        await instance.api.create_topic(
            old_master.broker_addr, TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES
        )
        await producer.start()
        stop = asyncio.Event()
        ok_times: list[float] = []

        async def produce() -> None:
            nonlocal failed
            i = 0
            while not stop.is_set():
                body = b"m-%06d" % i
                i += 1
                try:
                    result = await producer.send(Message(TOPIC, body))
                except Exception:
                    failed += 1
                    await asyncio.sleep(0.05)
                    continue
                if result.status is SendStatus.SEND_OK:
                    acked.add(body)
                    ok_times.append(time.monotonic())
                else:
                    failed += 1
                await asyncio.sleep(0.005)

        sender = asyncio.get_running_loop().create_task(produce())
        await eventually(lambda: len(acked) >= 200, what="200 acknowledged sends")
        # The slave must know the topic before the master dies (it copies the configs every few s).
        await asyncio.sleep(4.0)
        killed_at = time.monotonic()
        if fault == "kill -9":
            old_master.kill()
        else:
            os.kill(old_master.pid, signal.SIGSTOP)
        acked_at_kill = len(ok_times)
        info = await eventually(
            lambda: _with(group_info(namesrv), lambda i: i.get("masterBrokerId") == "2"),
            timeout=15.0,
            interval=0.05,
            what="the slave elected",
        )
        election = time.monotonic() - killed_at
        acked_before = len(acked)
        await eventually(lambda: len(acked) >= acked_before + 100, timeout=30.0, what="sends after failover")
        # (the one send in flight at the kill may still be answered by the old master)
        resumed = ok_times[acked_at_kill + 1] - killed_at
        stop.set()
        await sender
        print(f"\n{fault}: election {election:.2f} s, acked again after {resumed:.2f} s, {len(acked)} acked")
        # kill -9 closes the master's connections: at once. SIGSTOP: its heartbeats lapse (3 s here).
        assert election < (3.0 if fault == "kill -9" else 8.0)
        assert info["masterEpoch"] == "2"
        # The nameserver routes broker-a to the new master, registered as brokerId 0.
        route = await instance.api.get_topic_route(TOPIC)
        assert route is not None
        assert {b.broker_name: b.broker_addrs for b in route.broker_datas}["broker-a"] == {
            0: slave.broker_addr
        }
        # The new master recorded its epoch, from where its log ended.
        entries = EpochFile(tmp_path / "store-broker-a-1" / FILE_NAME).entries
        assert entries[-1][0] == 2 and len(entries) >= 1
        # Every acknowledged message is on the new master, each at one offset.
        seen: dict[bytes, int] = {}
        for q in range(QUEUES):
            mq = MessageQueue(TOPIC, "broker-a", q)
            for m in await drain_queue(instance.api, slave.broker_addr, mq, group="check"):
                assert m.body not in seen, f"{m.body!r} stored twice"
                seen[m.body] = m.queue_offset
        lost = acked - set(seen)
        assert not lost, f"{len(lost)} acknowledged messages lost, e.g. {sorted(lost)[:5]}"
        # The old master comes back: a slave now, it cuts any tail it wrote past epoch 1's end (the new
        # master's epoch 2 start), catches up and rejoins the SyncStateSet; its log is the new master's.
        if fault == "kill -9":
            brokers[0] = start_broker(
                tmp_path,
                namesrv.address,
                broker_id=0,
                role="SLAVE",
                **{**BROKER_CONF, "controllerAddr": namesrv.address},
            )
        else:
            os.kill(old_master.pid, signal.SIGCONT)
        await eventually(
            lambda: _with(group_info(namesrv), lambda i: i.get("syncStateSet") == [1, 2]),
            what="the old master rejoining as a slave",
        )
        info = await group_info(namesrv)
        assert info["masterBrokerId"] == "2" and info["masterEpoch"] == "2"
        new_end = await max_phy_offset(slave.broker_addr)
        await eventually(
            lambda: _with(max_phy_offset(brokers[0].broker_addr), lambda end: end == new_end),
            what="the old master's log to end where the new master's does",
        )
        assert commit_log(tmp_path / "store-broker-a-0", new_end) == commit_log(
            tmp_path / "store-broker-a-1", new_end
        )
        assert EpochFile(tmp_path / "store-broker-a-0" / FILE_NAME).entries == entries
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(old_master.pid, signal.SIGCONT)  # (a stopped process cannot take SIGTERM)
        with contextlib.suppress(Exception):
            await producer.shutdown()
        await instance.shutdown()
        for p in [*brokers, namesrv]:
            p.stop()


@needs_raft
async def test_three_controllers_lose_their_leader_then_a_three_replica_group_fails_over(
    tmp_path: Path, controllers: Any
) -> None:
    procs = controllers(3)
    addrs = [p.address for p in procs]
    namesrv = start_namesrv(tmp_path)
    conf = {**BROKER_CONF, "controllerAddr": ";".join(addrs)}
    brokers = [start_broker(tmp_path, namesrv.address, broker_id=i, role="SLAVE", **conf) for i in range(3)]
    client = RemotingClient(name="test")
    try:

        async def info() -> dict[str, Any]:
            return await replica_info(client, [p.address for p in procs if p.is_running()], "broker-a")

        await eventually(
            lambda: _with(info(), lambda i: i.get("syncStateSet") == [1, 2, 3]),
            what="three replicas in the SyncStateSet",
        )
        leader = await leader_of(client, addrs)
        procs[addrs.index(leader)].kill()
        await leader_of(client, [a for a in addrs if a != leader])
        # The brokers follow the new leader: the group is unchanged and its master still serves.
        assert (await info())["masterBrokerId"] == "1"
        killed_at = time.monotonic()
        brokers[0].kill()
        elected = await eventually(
            lambda: _with(info(), lambda i: i.get("masterBrokerId") in ("2", "3")),
            timeout=15.0,
            interval=0.05,
            what="a slave elected by the new controller leader",
        )
        print(f"\nelection by the new controller leader: {time.monotonic() - killed_at:.2f} s")
        new_master = int(elected["masterBrokerId"])
        assert elected["masterEpoch"] == "2" and elected["syncStateSet"] == [new_master]
        # The other slave follows the new master and rejoins its SyncStateSet.
        await eventually(
            lambda: _with(info(), lambda i: i.get("syncStateSet") == [2, 3]),
            what="the remaining slave following the new master",
        )

        async def routed() -> bool:
            route = await cluster_route(namesrv.address)
            return route.get(0) == brokers[new_master - 1].broker_addr

        await eventually(routed, what="the nameserver to route broker-a to the new master")
    finally:
        await client.close()
        for p in [*brokers, namesrv]:
            p.stop()


async def cluster_route(namesrv: str) -> dict[int, str]:
    """broker-a's addresses by broker id, as the nameserver's cluster info has them."""
    instance = ClientInstance(client_config(namesrv))
    try:
        info = java_json.loads(await instance.api.get_broker_cluster_info())
        addrs = info["brokerAddrTable"].get("broker-a", {}).get("brokerAddrs", {})
        return {int(k): v for k, v in addrs.items()}
    finally:
        await instance.shutdown()


async def test_a_master_that_cannot_hear_the_controller_refuses_writes(
    tmp_path: Path, controllers: Any
) -> None:
    """SIGSTOP the only controller: after controllerHeartBeatTimeoutMills the master can no longer know
    it is still the master (the controller may have elected another), so it refuses sends; once the
    controller answers again, sends are acknowledged again."""
    (ctl,) = controllers(1)
    namesrv = start_namesrv(tmp_path)
    conf = {**BROKER_CONF, "controllerAddr": ctl.address}
    brokers = [start_broker(tmp_path, namesrv.address, broker_id=i, role="SLAVE", **conf) for i in range(2)]
    instance = ClientInstance(client_config(namesrv.address))
    producer = Producer("fence-pg", config=client_config(namesrv.address), send_timeout=2.0)
    assert ctl.popen is not None
    try:
        client = RemotingClient(name="test")
        try:
            await eventually(
                lambda: _with(
                    replica_info(client, [ctl.address], "broker-a"), lambda i: i.get("syncStateSet") == [1, 2]
                ),
                what="both replicas in the SyncStateSet",
            )
        finally:
            await client.close()
        await instance.api.create_topic(brokers[0].broker_addr, TOPIC, read_queue_nums=2, write_queue_nums=2)
        await producer.start()

        async def sends() -> bool:
            try:
                return (await producer.send(Message(TOPIC, b"x"))).status is SendStatus.SEND_OK
            except Exception:
                return False

        await eventually(sends, what="a first acknowledged send")
        os.kill(ctl.popen.pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(4.5)  # controllerHeartBeatTimeoutMills (3 s) and a beat or two
            assert not await sends()
            assert "writes refused" in (tmp_path / "broker-broker-a-0.err").read_text()
        finally:
            os.kill(ctl.popen.pid, signal.SIGCONT)
        await eventually(sends, what="sends acknowledged once the controller answers")
    finally:
        with contextlib.suppress(Exception):
            await producer.shutdown()
        await instance.shutdown()
        for p in [*brokers, namesrv]:
            p.stop()
