"""Transactional messages against a real `orbitmq serve`: half messages stay invisible until
END_TRANSACTION commits them, rollbacks drop them, and the check-back asks a live producer of the group
(short transactionCheckInterval / transactionTimeOut for the test)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import orjson
import pytest

from orbitmq.message.codec import decode_record
from orbitmq.message.ids import decode_offset_msg_id
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_serve
from orbitmq.testing.process import ServerProcess
from orbitmq.transport import Connection, RemotingClient

from .conftest import Raw, messages

PREPARED = 0x4


@pytest.fixture(scope="module")
def tx_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("tx")
    conf = {"transactionCheckInterval": 300, "transactionTimeOut": 300}
    with start_serve(workdir, expect=("namesrv", "broker"), **conf) as proc:
        yield proc


async def send_half(raw: Raw, topic: str, body: bytes, group: str) -> RemotingCommand:
    response = await raw.send(
        topic,
        body,
        group=group,
        sys_flag=PREPARED,
        props={"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": body.hex().upper()},
    )
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response


def end_ext(send: RemotingCommand, group: str, action: int, *, from_check: bool = False) -> dict[str, str]:
    _, _, physical = decode_offset_msg_id(send.ext_fields["msgId"])
    return {
        "producerGroup": group,
        "tranStateTableOffset": send.ext_fields["queueOffset"],
        "commitLogOffset": str(physical),
        "commitOrRollback": str(action),
        "fromTransactionCheck": "true" if from_check else "false",
        "msgId": "x",
    }


async def test_commit_and_rollback(tx_serve: ServerProcess, client: RemotingClient) -> None:
    raw = Raw(client, tx_serve.broker_addr)
    await raw.create_topic("TxTopic", queues=1)
    committed = await send_half(raw, "TxTopic", b"commit-me", "txg")
    rolled = await send_half(raw, "TxTopic", b"roll-me-back", "txg")
    assert (await raw.pull("TxTopic", 0, 0)).code == ResponseCode.PULL_NOT_FOUND  # halves are invisible
    wrong = await raw.call(RequestCode.END_TRANSACTION, end_ext(committed, "other-group", 8))
    assert wrong.code == ResponseCode.SYSTEM_ERROR and "producer group" in (wrong.remark or "")
    ok = await raw.call(RequestCode.END_TRANSACTION, end_ext(committed, "txg", 8))
    assert ok.code == ResponseCode.SUCCESS, ok.remark
    ok = await raw.call(RequestCode.END_TRANSACTION, end_ext(rolled, "txg", 12))
    assert ok.code == ResponseCode.SUCCESS, ok.remark
    msgs = messages(await raw.pull("TxTopic", 0, 0))
    assert [m.body for m in msgs] == [b"commit-me"]
    assert msgs[0].sys_flag & 0xC == 0x8  # COMMIT type
    assert msgs[0].properties["REAL_TOPIC"] == "TxTopic"


async def test_check_back_asks_a_live_producer(tx_serve: ServerProcess) -> None:
    checks: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    async def on_check(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        checks.put_nowait(request)
        return None

    producer = RemotingClient()
    producer.register(RequestCode.CHECK_TRANSACTION_STATE, on_check)
    try:
        raw = Raw(producer, tx_serve.broker_addr)
        await raw.create_topic("TxChecked", queues=1)
        body = orjson.dumps(
            {"clientID": "tx-producer", "consumerDataSet": [], "producerDataSet": [{"groupName": "txcheck"}]}
        )
        assert (await raw.call(RequestCode.HEART_BEAT, None, body)).code == ResponseCode.SUCCESS
        await send_half(raw, "TxChecked", b"unknown-state", "txcheck")
        check = await asyncio.wait_for(checks.get(), 10)
        half = decode_record(check.body_bytes())
        assert half.topic == "TxChecked" and half.body == b"unknown-state"
        assert half.properties["TRANSACTION_CHECK_TIMES"] == "1"
        ext = check.ext_fields
        answer = {
            "producerGroup": "txcheck",
            "tranStateTableOffset": ext["tranStateTableOffset"],
            "commitLogOffset": ext["commitLogOffset"],
            "commitOrRollback": "8",
            "fromTransactionCheck": "true",
            "msgId": ext["msgId"],
        }
        done = await raw.call(RequestCode.END_TRANSACTION, answer)
        assert done.code == ResponseCode.SUCCESS, done.remark
        assert [m.body for m in messages(await raw.pull("TxChecked", 0, 0))] == [b"unknown-state"]
        await asyncio.sleep(1.0)  # settled: no further checks for it
        assert checks.empty()
    finally:
        await producer.close()
