"""`sendGatherMinRequests`: a turn of at least that many received requests writes its plain sends'
records with one vectored write before the answers leave (0 never does). Over a real socket to a running
broker: every pipelined send is answered, stored and readable either way; with the key met, the records
went through pwritev (counted), with 0 not one did; a negative value is refused."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from orbitmq.broker.app import BrokerApp
from orbitmq.broker.config import BrokerConfig
from orbitmq.client.send_request import send_header_v2
from orbitmq.message.codec import decode_records
from orbitmq.message.property_string import encode_properties
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.protocol.frames import FrameDecoder

from .conftest import small_broker_properties

TOPIC = "GatherTopic"
SENDS = 24


async def _pipelined_sends(address: str, count: int) -> list[RemotingCommand]:
    """`count` SEND_MESSAGE_V2 requests in one write; the answers, in order."""
    host, port = address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        frames = []
        for i in range(count):
            header = send_header_v2(
                group="gather_group",
                topic=TOPIC,
                queue_id=i % 2,
                sys_flag=0,
                born_timestamp=1_700_000_000_000 + i,
                flag=0,
                properties=encode_properties({"UNIQ_KEY": f"U{i:04d}", "WAIT": "true"}),
                broker_name="broker-a",
            )
            frames.append(
                encode_command_bytes(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, b"m%d" % i))
            )
        writer.write(b"".join(frames))
        await writer.drain()
        decoder = FrameDecoder()
        answers: list[RemotingCommand] = []
        while len(answers) < count:
            chunk = await asyncio.wait_for(reader.read(65536), 10)
            assert chunk, "the broker closed the connection"
            answers += [decode_command(f) for f in decoder.feed(chunk)]
        return answers
    finally:
        writer.close()


@pytest.mark.parametrize("least", [8, 0])
async def test_a_turn_of_many_sends_is_written_together_and_every_send_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, least: int
) -> None:
    calls: list[int] = []
    real_pwritev = os.pwritev

    def counting_pwritev(fd: int, buffers: list[Any], offset: int) -> int:
        calls.append(len(buffers))
        return real_pwritev(fd, buffers, offset)

    config = BrokerConfig.from_properties(
        small_broker_properties(tmp_path, sendGatherMinRequests=str(least), autoCreateTopicEnable="true")
    )
    app = BrokerApp(config)
    await app.start()
    try:
        await _pipelined_sends(app.server.address, 1)  # (the topic exists from here on)
        monkeypatch.setattr(os, "pwritev", counting_pwritev)
        answers = await _pipelined_sends(app.server.address, SENDS)
        monkeypatch.undo()
        assert [a.code for a in answers] == [ResponseCode.SUCCESS] * SENDS
        # the records went through pwritev (one piece each) only when the turn was gathered
        assert (sum(calls) >= SENDS // 2) if least else calls == []
        store = app.store
        bodies = []
        for queue_id in (0, 1):
            got = store.get_messages("g", TOPIC, queue_id, 0, 64, None)
            bodies += [m.body for m in decode_records(b"".join(got.buffers))]
        assert sorted(bodies) == sorted([b"m0"] + [b"m%d" % i for i in range(SENDS)])
    finally:
        await app.stop()


def test_a_negative_value_is_refused_and_eight_is_the_default() -> None:
    assert BrokerConfig().send_gather_min_requests == 8
    with pytest.raises(ValueError, match="sendGatherMinRequests"):
        BrokerApp(BrokerConfig.from_properties({"sendGatherMinRequests": "-1"}))
