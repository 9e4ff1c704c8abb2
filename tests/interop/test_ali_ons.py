"""ali-ons (npm, pure JavaScript RocketMQ 4.x client) produces and consumes against `orbitmq serve`.

The node script (tests/interop/node/produce_consume.js) routes through the embedded nameserver, sends
with SEND_MESSAGE_V2 and consumes with a push consumer (heartbeat, consumer list, offsets, long-polling
pulls, oneway offset commits). The topic is created first (ali-ons cannot auto-create).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_serve
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


async def test_ali_ons_produces_and_consumes(tmp_path: Path) -> None:
    count = 20
    with start_serve(tmp_path, expect=("namesrv", "broker")) as serve:
        client = RemotingClient()
        try:
            header = create_topic_ext("AliOnsTopic")
            request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            response = await client.invoke(serve.broker_addr, request, 5.0)
            assert response.code == ResponseCode.SUCCESS, response.remark
        finally:
            await client.close()
        env = {"NAMESRV": serve.address, "TOPIC": "AliOnsTopic", "COUNT": str(count), "PATH": "/usr/bin:/bin"}
        env["PATH"] = str(Path(shutil.which("node") or "node").parent) + ":" + env["PATH"]
        proc = subprocess.run(
            ["node", "produce_consume.js"],
            cwd=NODE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no result from node (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert proc.returncode == 0, result
    assert [s["status"] for s in result["sent"]] == ["SEND_OK"] * count
    bodies = sorted(r["body"] for r in result["received"])
    assert bodies == sorted(f"ali-ons message {i}" for i in range(count))
    assert {r["tags"] for r in result["received"]} == {"TagA"}
