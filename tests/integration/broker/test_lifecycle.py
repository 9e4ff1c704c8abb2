"""Broker lifecycle with real processes: nameserver registration and removal, restart keeping messages
and offsets, SIGKILL recovery of a SYNC_FLUSH store, and the `orbitmq broker` command line."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import orjson

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.testing.launch import start_broker, start_namesrv, start_serve
from orbitmq.transport import RemotingClient

from .conftest import Raw, messages

# Small commit-log segments keep the restart's recovery scan short.
SMALL_COMMIT_LOG = 4 * 1024 * 1024


async def route_code(raw: Raw, topic: str) -> int:
    response = await raw.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, addr=raw.namesrv)
    return response.code


async def test_registration_restart_and_unregistration(tmp_path: Path, client: RemotingClient) -> None:
    store = tmp_path / "store"
    conf = {"storePathRootDir": store, "mappedFileSizeCommitLog": SMALL_COMMIT_LOG}
    with start_namesrv(tmp_path) as namesrv:
        with start_broker(tmp_path, namesrv.address, expect=("broker",), **conf) as broker:
            raw = Raw(client, broker.broker_addr, namesrv.address)
            # Registered at start: the cluster info lists the broker under its real (port 0 -> bound) port.
            info = await raw.call(RequestCode.GET_BROKER_CLUSTER_INFO, addr=namesrv.address)
            assert broker.broker_addr.encode() in info.body_bytes()
            await raw.create_topic("Durable", queues=1)
            assert await route_code(raw, "Durable") == ResponseCode.SUCCESS
            for i in range(5):
                assert (await raw.send("Durable", b"d%d" % i)).code == ResponseCode.SUCCESS
            group = {"consumerGroup": "dg", "topic": "Durable", "queueId": "0"}
            await raw.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**group, "commitOffset": "3"})
            assert broker.stop() == 0
        assert not (store / "abort").exists()  # clean shutdown removes it
        # The broker unregistered on the way out: its topic has no route any more.
        for _ in range(30):
            if await route_code(raw, "Durable") == ResponseCode.TOPIC_NOT_EXIST:
                break
            await asyncio.sleep(0.1)
        assert await route_code(raw, "Durable") == ResponseCode.TOPIC_NOT_EXIST
        offsets_file = orjson.loads((store / "config" / "consumerOffset.json").read_bytes())
        assert offsets_file["offsetTable"]["Durable@dg"] == {"0": 3}

        with start_broker(tmp_path, namesrv.address, expect=("broker",), **conf) as broker:
            raw = Raw(client, broker.broker_addr, namesrv.address)
            msgs = messages(await raw.pull("Durable", 0, 0))
            assert [m.body for m in msgs] == [b"d%d" % i for i in range(5)]
            offset = await raw.call(RequestCode.QUERY_CONSUMER_OFFSET, group)
            assert offset.ext_fields["offset"] == "3"
            assert await route_code(raw, "Durable") == ResponseCode.SUCCESS


async def test_sync_flush_send_survives_sigkill(tmp_path: Path, client: RemotingClient) -> None:
    store = tmp_path / "store"
    conf = {
        "storePathRootDir": store,
        "flushDiskType": "SYNC_FLUSH",
        "mappedFileSizeCommitLog": 4 * 1024 * 1024,
    }
    with start_broker(tmp_path, None, expect=("broker",), **conf) as broker:
        raw = Raw(client, broker.broker_addr)
        await raw.create_topic("Synced", queues=1)
        for i in range(20):
            response = await raw.send("Synced", b"s%d" % i)
            assert response.code == ResponseCode.SUCCESS, response.remark
        broker.kill()
    assert (store / "abort").exists()  # the crash left the marker: recovery runs on the next start
    with start_broker(tmp_path, None, expect=("broker",), **conf) as broker:
        raw = Raw(client, broker.broker_addr)
        msgs = messages(await raw.pull("Synced", 0, 0))
        assert [m.body for m in msgs] == [b"s%d" % i for i in range(20)]
        assert (await raw.send("Synced", b"after")).ext_fields["queueOffset"] == "20"


async def test_auto_create_disabled_answers_topic_not_exist(tmp_path: Path, client: RemotingClient) -> None:
    with start_broker(tmp_path, None, expect=("broker",), autoCreateTopicEnable=False) as broker:
        raw = Raw(client, broker.broker_addr)
        response = await raw.send("NotCreated", b"x")
        assert response.code == ResponseCode.TOPIC_NOT_EXIST
        assert "not exist" in (response.remark or "")
        config = await raw.call(RequestCode.GET_BROKER_CONFIG)
        assert b"autoCreateTopicEnable=false" in config.body_bytes()


async def test_killed_broker_leaves_the_route(tmp_path: Path, client: RemotingClient) -> None:
    with start_namesrv(tmp_path) as namesrv:
        broker = start_broker(tmp_path, namesrv.address, expect=("broker",))
        try:
            raw = Raw(client, broker.broker_addr, namesrv.address)
            await raw.create_topic("Ephemeral", queues=1)
            assert await route_code(raw, "Ephemeral") == ResponseCode.SUCCESS
        finally:
            broker.kill()
        # The registration connection died with the process: the nameserver drops the broker at once.
        for _ in range(50):
            if await route_code(raw, "Ephemeral") == ResponseCode.TOPIC_NOT_EXIST:
                break
            await asyncio.sleep(0.1)
        assert await route_code(raw, "Ephemeral") == ResponseCode.TOPIC_NOT_EXIST


def test_serve_stops_cleanly_on_sigint_and_sigterm(tmp_path: Path) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        workdir = tmp_path / sig.name
        with start_serve(workdir, expect=("namesrv", "broker")) as serve:
            assert serve.address != serve.broker_addr
            assert (workdir / "store" / "abort").exists()  # present while running
            serve.popen.send_signal(sig)
            assert serve.wait(timeout=10) == 0
        assert not (workdir / "store" / "abort").exists()
        assert (workdir / "store" / "config" / "topics.json").exists()
