"""The controller over remoting: ids, registration, election, SyncStateSet; one controller, three (Raft),
and the one a nameserver embeds."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import orjson

from orbitmq.controller import codes
from orbitmq.testing.cluster import free_port
from orbitmq.testing.launch import start_namesrv
from orbitmq.transport.client import RemotingClient

from .conftest import ask, eventually, leader_of, needs_raft, replica_info

GROUP = {"clusterName": "DefaultCluster", "brokerName": "broker-a"}


async def register(client: RemotingClient, addr: str, address: str) -> int:
    """A broker's start: next id, apply it, register, heartbeat; returns the id."""
    answer = await ask(client, addr, codes.CONTROLLER_GET_NEXT_BROKER_ID, GROUP)
    assert answer.code == 0, answer.remark
    broker_id = int(answer.ext_fields["nextBrokerId"])
    fields = {**GROUP, "appliedBrokerId": str(broker_id), "registerCheckCode": f"{address};1"}
    assert (await ask(client, addr, codes.CONTROLLER_APPLY_BROKER_ID, fields)).code == 0
    fields = {**GROUP, "brokerId": str(broker_id), "brokerAddress": address}
    assert (await ask(client, addr, codes.CONTROLLER_REGISTER_BROKER, fields)).code == 0
    await heartbeat(client, [addr], broker_id, address)
    return broker_id


async def heartbeat(
    client: RemotingClient, addrs: list[str], broker_id: int, address: str, timeout_ms: int = 1500
) -> None:
    """A BROKER_HEARTBEAT to each of `addrs` (a dead controller is skipped)."""
    fields = {
        **GROUP,
        "brokerId": str(broker_id),
        "brokerAddr": address,
        "heartbeatTimeoutMills": str(timeout_ms),
        "epoch": "0",
        "maxOffset": "0",
    }
    for addr in addrs:
        try:
            answer = await ask(client, addr, codes.BROKER_HEARTBEAT, fields)
        except (OSError, TimeoutError):
            continue
        assert answer.code == 0, answer.remark


async def test_single_controller_assigns_ids_elects_and_fences(controllers: object, tmp_path: Path) -> None:
    (ctl,) = controllers(1)  # type: ignore[operator]
    client = RemotingClient(name="test")
    try:
        a = await register(client, ctl.address, "127.0.0.1:1001")
        b = await register(client, ctl.address, "127.0.0.1:1002")
        assert (a, b) == (1, 2)
        # A taken id is refused to another broker.
        taken = {**GROUP, "appliedBrokerId": "1", "registerCheckCode": "127.0.0.1:9999;5"}
        assert (await ask(client, ctl.address, codes.CONTROLLER_APPLY_BROKER_ID, taken)).code == 2014
        # The group has no master: broker 1 asks and is elected, epoch 1, SyncStateSet {1}.
        elect = {**GROUP, "brokerId": "1"}
        answer = await ask(client, ctl.address, codes.CONTROLLER_ELECT_MASTER, elect)
        assert answer.code == 0, answer.remark
        assert answer.ext_fields["masterBrokerId"] == "1"
        assert answer.ext_fields["masterEpoch"] == "1"
        # Broker 2 asking too hears that the master is alive (MASTER_STILL_EXIST) and who it is.
        answer = await ask(client, ctl.address, codes.CONTROLLER_ELECT_MASTER, {**GROUP, "brokerId": "2"})
        assert answer.code == 2011 and answer.ext_fields["masterBrokerId"] == "1"
        # The master adds broker 2; a stale SyncStateSet epoch or master epoch is fenced.
        alter = {"brokerName": "broker-a", "masterBrokerId": "1", "masterEpoch": "1"}
        body = orjson.dumps({"syncStateSet": [1, 2], "syncStateSetEpoch": 1})
        answer = await ask(client, ctl.address, codes.CONTROLLER_ALTER_SYNC_STATE_SET, alter, body)
        assert answer.code == 0, answer.remark
        assert answer.ext_fields["newSyncStateSetEpoch"] == "2"
        answer = await ask(client, ctl.address, codes.CONTROLLER_ALTER_SYNC_STATE_SET, alter, body)
        assert answer.code == 2001  # CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
        stale = {**alter, "masterEpoch": "0"}
        answer = await ask(client, ctl.address, codes.CONTROLLER_ALTER_SYNC_STATE_SET, stale, body)
        assert answer.code == 2000  # CONTROLLER_FENCED_MASTER_EPOCH
        # The master's heartbeats lapse (1.5 s): broker 2, in the SyncStateSet and alive, takes over.
        started = time.monotonic()

        async def master_is_2() -> bool:
            await heartbeat(client, [ctl.address], 2, "127.0.0.1:1002")
            info = await replica_info(client, [ctl.address], "broker-a")
            return info.get("masterBrokerId") == "2"

        await eventually(master_is_2, 10.0, "broker 2 elected")
        assert time.monotonic() - started < 5.0
        info = await replica_info(client, [ctl.address], "broker-a")
        assert info["masterEpoch"] == "2" and info["syncStateSet"] == [2]
        assert info["masterAddress"] == "127.0.0.1:1002"
    finally:
        await client.close()
    # The state survives a restart of the single controller (its state file).
    ctl.stop()
    ctl.start()
    client = RemotingClient(name="test")
    try:
        info = await replica_info(client, [ctl.address], "broker-a")
        assert info["masterBrokerId"] == "2" and info["masterEpoch"] == "2"
    finally:
        await client.close()


@needs_raft
async def test_three_controllers_survive_the_leader(controllers: object) -> None:
    procs = controllers(3)  # type: ignore[operator]
    addrs = [p.address for p in procs]
    client = RemotingClient(name="test")
    try:
        leader = await leader_of(client, addrs)
        followers = [a for a in addrs if a != leader]
        # A follower refuses writes: CONTROLLER_NOT_LEADER.
        answer = await ask(client, followers[0], codes.CONTROLLER_GET_NEXT_BROKER_ID, GROUP)
        assert answer.code == 2007
        a = await register(client, leader, "127.0.0.1:1001")
        b = await register(client, leader, "127.0.0.1:1002")

        async def beat() -> None:  # both brokers stay alive at every controller, as real ones do
            while True:
                for bid in (a, b):
                    with contextlib.suppress(Exception):
                        await heartbeat(client, addrs, bid, f"127.0.0.1:100{bid}", 10_000)
                await asyncio.sleep(0.3)

        beating = asyncio.get_running_loop().create_task(beat())
        await asyncio.sleep(0.5)
        answer = await ask(client, leader, codes.CONTROLLER_ELECT_MASTER, {**GROUP, "brokerId": str(a)})
        assert answer.code == 0 and answer.ext_fields["masterBrokerId"] == str(a)
        # Kill the leader: another controller leads, with the same state.
        killed = procs[addrs.index(leader)]
        killed.kill()
        new_leader = await leader_of(client, followers)
        info = await replica_info(client, [new_leader], "broker-a")
        assert info["masterBrokerId"] == str(a) and info["masterEpoch"] == "1"
        assert info["syncStateSet"] == [a]
        # The new leader keeps serving writes (two of three controllers are a majority).
        c = await register(client, new_leader, "127.0.0.1:1003")
        assert c == 3
        # The killed controller comes back as a follower and catches up from its journal and the leader.
        killed.start()
        addrs[addrs.index(leader)] = killed.address

        async def caught_up() -> bool:
            answer = await ask(client, killed.address, codes.CONTROLLER_GET_METADATA_INFO, {})
            return answer.ext_fields.get("controllerLeaderId", "") != ""

        await eventually(caught_up, 20.0, "the restarted controller follows a leader")
        final = await leader_of(client, addrs)
        assert (await replica_info(client, [final], "broker-a"))["masterBrokerId"] == str(a)
        beating.cancel()
    finally:
        await client.close()


async def test_controller_embedded_in_namesrv(tmp_path: Path) -> None:
    """Both layouts: without peers the controller answers on the nameserver's port; with RocketMQ's
    quick-start namesrv.conf (one peer) on the peer's address, which brokers name as controllerAddr."""
    port = free_port()
    plain = start_namesrv(
        tmp_path, name="plain", enableControllerInNamesrv=True, controllerStorePath=tmp_path / "ctl1"
    )
    quick_start = start_namesrv(
        tmp_path,
        name="quick-start",
        enableControllerInNamesrv=True,
        controllerDLegerGroup="group1",
        controllerDLegerPeers=f"n0-127.0.0.1:{port}",
        controllerDLegerSelfId="n0",
        controllerStorePath=tmp_path / "ctl2",
    )
    client = RemotingClient(name="test")
    try:
        for addr in (plain.address, f"127.0.0.1:{port}"):
            broker_id = await register(client, addr, "127.0.0.1:1001")
            assert broker_id == 1
            answer = await ask(client, addr, codes.CONTROLLER_ELECT_MASTER, {**GROUP, "brokerId": "1"})
            assert answer.code == 0 and answer.ext_fields["masterBrokerId"] == "1"
        assert f"controller listening on 127.0.0.1:{port}" in (tmp_path / "quick-start.out").read_text()
    finally:
        await client.close()
        plain.stop()
        quick_start.stop()
