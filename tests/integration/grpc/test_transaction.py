"""Transactions from the official 5.x Python client: half messages committed or rolled back by the client,
and an orphaned one resolved through the broker's check-back, relayed over the client's Telemetry stream
(RecoverOrphanedTransactionCommand) to its TransactionChecker. A 4.x consumer sees what was committed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from rocketmq import (
    Message,
    TransactionChecker,
    TransactionResolution,
)

from .conftest import GrpcServe, grpc_serve, unique
from .test_send import consumer_4x, eventually, message, producer


class Checker(TransactionChecker):
    def __init__(self, resolution: int) -> None:
        self.resolution = resolution
        self.checked: list[Message] = []
        self.called = threading.Event()

    def check(self, message: Message) -> int:
        self.checked.append(message)
        self.called.set()
        return self.resolution


@pytest.fixture
def checking_serve(tmp_path: Path) -> Iterator[GrpcServe]:
    """A broker that checks half messages older than 1 s, every second."""
    with grpc_serve(tmp_path, transactionTimeOut=1000, transactionCheckInterval=1000) as running:
        yield running


async def test_commit_and_rollback_from_the_client(serve: GrpcServe) -> None:
    topic = unique("Tx")
    await serve.create_topic_async(topic)
    checker = Checker(TransactionResolution.ROLLBACK)
    with producer(serve, topic, checker) as client:

        def run() -> tuple[str, str]:
            kept, dropped = client.begin_transaction(), client.begin_transaction()
            committed = client.send(message(topic, b"commit-me"), kept)
            client.send(message(topic, b"roll-me-back"), dropped)
            kept.commit()
            dropped.rollback()
            return committed.message_id, committed.transaction_id

        message_id, transaction_id = await asyncio.to_thread(run)
    assert transaction_id and transaction_id != message_id
    async with consumer_4x(serve, topic) as received:
        await eventually(lambda: any(m.body == b"commit-me" for m in received), "the committed message")
        await asyncio.sleep(1.0)
    assert [m.body for m in received] == [b"commit-me"]
    assert received[0].unique_id == message_id
    assert not checker.checked


async def test_an_orphaned_half_message_is_resolved_by_the_check_back(checking_serve: GrpcServe) -> None:
    serve = checking_serve
    topic = unique("TxCheck")
    await serve.create_topic_async(topic)
    checker = Checker(TransactionResolution.COMMIT)
    with producer(serve, topic, checker) as client:

        def send_half() -> str:
            orphan = client.begin_transaction()
            return client.send(message(topic, b"orphan", tag="T1", keys="k-orphan"), orphan).message_id

        message_id = await asyncio.to_thread(send_half)
        assert await asyncio.to_thread(checker.called.wait, 30), "no check-back reached the client"
        async with consumer_4x(serve, topic) as received:
            await eventually(
                lambda: any(m.body == b"orphan" for m in received), "the message the check committed"
            )
    checked = checker.checked[0]
    assert checked.message_id == message_id
    assert checked.topic == topic and checked.tag == "T1" and "k-orphan" in checked.keys
    assert [m.unique_id for m in received if m.body == b"orphan"] == [message_id]
