"""A real `orbitmq serve` with transientStorePoolEnable=true (broker.conf): sent messages are committed by
the broker's commit loop, consumed (plain and long-polling pulls) across commit-log segment rolls, and
survive a clean restart."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.testing.launch import start_serve
from orbitmq.transport import RemotingClient

from .conftest import Raw, messages

POOL_CONF: dict[str, Any] = {
    "transientStorePoolEnable": "true",
    "transientStorePoolSize": 2,
    "mappedFileSizeCommitLog": 1 << 20,
}
TOPIC = "PoolTopic"


async def _pull_all(raw: Raw, queue_id: int, count: int) -> list[bytes]:
    bodies: list[bytes] = []
    offset = 0
    deadline = asyncio.get_running_loop().time() + 20
    while len(bodies) < count:
        assert asyncio.get_running_loop().time() < deadline, f"only {len(bodies)} of {count} arrived"
        response = await raw.pull(TOPIC, queue_id, offset, suspend_ms=3000, timeout=10.0)
        if response.code != ResponseCode.SUCCESS:
            assert response.code == ResponseCode.PULL_NOT_FOUND, (response.code, response.remark)
            continue
        bodies += [m.body for m in messages(response)]
        offset = int(response.ext_fields["nextBeginOffset"])
    return bodies


async def _runtime_info(raw: Raw) -> dict[str, str]:
    response = await raw.call(RequestCode.GET_BROKER_RUNTIME_INFO)
    table: dict[str, str] = orjson.loads(response.body_bytes())["table"]
    return table


async def test_broker_with_transient_store_pool_delivers_and_restarts(tmp_path: Path) -> None:
    bodies = [b"%04d-" % i + bytes([97 + i % 26]) * 8000 for i in range(300)]  # ~2.4 MiB: two rolls
    with start_serve(tmp_path, **POOL_CONF) as proc:
        client = RemotingClient()
        try:
            raw = Raw(client, proc.broker_addr, proc.address)
            await raw.create_topic(TOPIC, queues=2)
            assert (await _runtime_info(raw))["remainTransientStoreBufferNumbs"] == "2"
            # A long-polling pull parked before anything is sent is woken by the commit's dispatch. It is
            # parked for 60 s and awaited for 4 s, less than the hold service's 5 s re-check: only the
            # arrival wake-up (commit -> dispatch -> listener) can answer it in time.
            parked = asyncio.ensure_future(raw.pull(TOPIC, 1, 0, suspend_ms=60_000, timeout=70.0))

            async def held() -> bool:
                return (await _runtime_info(raw))["heldPullRequests"] == "1"

            deadline = asyncio.get_running_loop().time() + 10
            while not await held():
                assert asyncio.get_running_loop().time() < deadline, "the pull was never parked"
                await asyncio.sleep(0.05)
            for i, body in enumerate(bodies):
                sent = await raw.send(TOPIC, body, queue_id=i % 2, keys=f"key{i}")
                assert sent.code == ResponseCode.SUCCESS, sent.remark
                assert sent.ext_fields["queueOffset"] == str(i // 2)
                if i == 1:
                    woken = await asyncio.wait_for(parked, 4.0)
                    assert messages(woken)[0].body == bodies[1]
            assert await _pull_all(raw, 0, 150) == bodies[0::2]
            assert await _pull_all(raw, 1, 150) == bodies[1::2]
            info = await _runtime_info(raw)
            assert info["remainTransientStoreBufferNumbs"] == "1"  # one buffer serves the current segment
            assert int(info["commitLogMaxOffset"]) > 2 << 20
            # The last messages are committed (hence pullable) without any further traffic.
            last = await raw.send(TOPIC, b"last", queue_id=0)
            assert last.code == ResponseCode.SUCCESS
            assert (await _pull_all(raw, 0, 151))[-1] == b"last"
            tail = await raw.send(TOPIC, b"tail", queue_id=1)  # maybe uncommitted when the broker stops
            assert tail.code == ResponseCode.SUCCESS
        finally:
            await client.close()
        assert proc.stop() == 0
    segments = sorted((tmp_path / "store" / "commitlog").iterdir())
    assert len(segments) >= 3 and all(p.stat().st_size == 1 << 20 for p in segments)
    assert not (tmp_path / "store" / "abort").exists()

    with start_serve(tmp_path, **POOL_CONF) as proc:
        client = RemotingClient()
        try:
            raw = Raw(client, proc.broker_addr, proc.address)
            assert await _pull_all(raw, 0, 151) == [*bodies[0::2], b"last"]
            assert await _pull_all(raw, 1, 151) == [*bodies[1::2], b"tail"]
        finally:
            await client.close()
