"""ali-ons and orbitmq's Python client exchange messages through `orbitmq serve`, in both directions.

(a) ali-ons produces (tags, keys, a user property, a zlib-compressed >= 4 KiB body; no UNIQ_KEY) and the
    Python PushConsumer consumes: bodies, tags, keys, properties, queue ids/offsets and message ids agree
    (ali-ons' send-result msgId is the broker's offset id, which is what the Python side reports).
(b) the Python Producer sends (tags, keys, user properties, a compressed >= 4 KiB body, a batch) and an
    ali-ons push consumer reads them: ali-ons computes msgId from store host + commit-log offset, so it
    must equal the Python SendResult.offset_msg_id; UNIQ_KEY arrives as a property equal to msg_id.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from orbitmq.client.aio import (
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from orbitmq.message import properties as P
from orbitmq.message.sysflag import COMPRESSED_FLAG
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess, start_serve
from orbitmq.testing.requests import create_topic_ext
from orbitmq.transport import RemotingClient

NODE_DIR = Path(__file__).parent / "node"

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "ali-ons").is_dir(),
        reason="ali-ons is not installed (run scripts/install-dev)",
    ),
]


async def create_topic(serve: ServerProcess, topic: str) -> None:
    client = RemotingClient()
    try:
        request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_ext(topic))
        response = await client.invoke(serve.broker_addr, request, 5.0)
        assert response.code == ResponseCode.SUCCESS, response.remark
    finally:
        await client.close()


async def run_node(script: str, **env_vars: str) -> dict[str, Any]:
    node = shutil.which("node") or "node"
    env = {"PATH": f"{Path(node).parent}:/usr/bin:/bin", **env_vars}
    proc = await asyncio.create_subprocess_exec(
        node,
        script,
        cwd=NODE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 90)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    lines = [line for line in out.decode().splitlines() if line.startswith("{")]
    assert lines, f"no result from {script} (rc {proc.returncode}):\n{out.decode()}\n{err.decode()[-3000:]}"
    result: dict[str, Any] = json.loads(lines[-1])
    assert proc.returncode == 0, result
    return result


async def test_ali_ons_producer_python_push_consumer(tmp_path: Path) -> None:
    topic = "AliToPython"
    count = 8
    with start_serve(tmp_path, expect=("namesrv", "broker")) as serve:
        await create_topic(serve, topic)
        produced = await run_node("produce_only.js", NAMESRV=serve.address, TOPIC=topic, COUNT=str(count))
        sent = produced["sent"]
        assert [s["status"] for s in sent] == ["SEND_OK"] * (count + 1), produced

        received: dict[bytes, MessageExt] = {}
        done = asyncio.Event()

        async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
            for m in msgs:
                received[m.body] = m
            if len(received) >= count + 1:
                done.set()
            return ConsumeStatus.CONSUME_SUCCESS

        config = ClientConfig(namesrv_addrs=[serve.address], rebalance_interval=1.0)
        consumer = PushConsumer(
            "GID_PY_FROM_ALI", config=config, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        consumer.subscribe(topic, "TagA || Big")
        consumer.register_listener(listener)
        await consumer.start()
        try:
            await asyncio.wait_for(done.wait(), 20)
        finally:
            await consumer.shutdown()

    assert len(received) == count + 1
    for s in sent:
        m = received[s["body"].encode()]
        big = s["body"].endswith("-big")
        assert m.tags == ("Big" if big else "TagA")
        i = sent.index(s)
        assert m.keys == ("big" if big else f"key-{i} k2-{i}")
        assert m.key_list == (["big"] if big else [f"key-{i}", f"k2-{i}"])
        assert m.properties["color"] == ("big" if big else f"c{i}")
        # ali-ons sets no UNIQ_KEY: both sides identify the message by the broker's offset id.
        assert m.unique_id is None
        assert m.msg_id == m.offset_msg_id == s["msgId"]
        assert (m.queue_id, m.queue_offset) == (s["queueId"], s["queueOffset"])
        assert bool(m.sys_flag & COMPRESSED_FLAG) == big  # ali-ons deflated the big body, the bit survived


async def test_python_producer_ali_ons_consumer(tmp_path: Path) -> None:
    topic = "PythonToAli"
    with start_serve(tmp_path, expect=("namesrv", "broker")) as serve:
        await create_topic(serve, topic)
        expected: dict[str, dict[str, Any]] = {}
        async with Producer("PID_PY_TO_ALI", [serve.address]) as producer:
            for i in range(4):
                msg = Message.create(
                    topic,
                    f"python to ali {i}",
                    tags="TagP",
                    keys=[f"pk-{i}", "shared"],
                    properties={"n": str(i)},
                )
                result = await producer.send(msg)
                expected[f"python to ali {i}"] = {"msg": msg, "result": result}
            big_body = "y" * 6000 + "-big"
            big = Message.create(topic, big_body, tags="Big", keys="bigkey", properties={"size": "large"})
            big_result = await producer.send(big)
            expected[big_body[:20]] = {"msg": big, "result": big_result}
            batch = [
                Message.create(topic, f"batch {j}", tags="TagB", keys=f"bk-{j}", properties={"j": str(j)})
                for j in range(3)
            ]
            batch_result = await producer.send_batch(batch)
            batch_offset_ids = batch_result.offset_msg_id.split(",")
            batch_uniq_ids = batch_result.msg_id.split(",")
            assert len(batch_offset_ids) == len(batch_uniq_ids) == 3
            for j, msg in enumerate(batch):
                expected[f"batch {j}"] = {
                    "msg": msg,
                    "result": batch_result,
                    "offset_msg_id": batch_offset_ids[j],
                    "uniq": batch_uniq_ids[j],
                    "queue_offset": batch_result.queue_offset + j,
                }

        consumed = await run_node(
            "consume_only.js",
            NAMESRV=serve.address,
            TOPIC=topic,
            EXPECT=str(len(expected)),
            TIMEOUT_MS="40000",
        )

    by_body = {r["body"]: r for r in consumed["received"]}
    assert sorted(by_body) == sorted(expected), consumed
    for body, exp in expected.items():
        r = by_body[body]
        msg: Message = exp["msg"]
        result = exp["result"]
        assert r["tags"] == msg.tags
        assert r["keys"] == msg.keys
        props = r["properties"]
        for key, value in msg.properties.items():
            if key not in (P.WAIT,):
                assert props.get(key) == value, (body, key, props)
        assert props[P.UNIQ_KEY] == exp.get("uniq", result.msg_id)
        assert r["msgId"] == exp.get("offset_msg_id", result.offset_msg_id)
        assert r["queueId"] == result.message_queue.queue_id
        assert r["queueOffset"] == exp.get("queue_offset", result.queue_offset)
    big_seen = by_body[big_body[:20]]
    assert big_seen["bodyLength"] == len(big_body)  # ali-ons inflated the body the Python client deflated
    assert big_seen["sysFlag"] & COMPRESSED_FLAG
