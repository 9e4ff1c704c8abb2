"""TransactionProducer against a real `orbitmq serve` (namesrv + broker processes, short check interval):
commit, rollback, unknown answered by the check-back, a local transaction that raises, and a producer
restarted while its transaction is unknown (the new instance of the group answers the check)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from orbitmq.client.aio import ClientConfig, ClientInstance, Message, MessageExt, MessageQueue
from orbitmq.client.transaction_producer import (
    LocalTransactionState,
    TransactionProducer,
    TransactionSendResult,
)
from orbitmq.testing import ServerProcess, start_serve
from orbitmq.testing.drain import drain_queue

# The broker's bookkeeping (fact sheet: transactions): half messages in queue 0 of the half topic, and one
# op record (tag "d", body = the half's queue offset) per transaction the broker ended.
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    conf = {
        "transactionCheckInterval": 400,
        "transactionTimeOut": 800,
        "transactionCheckMax": 30,
        "mappedFileSizeCommitLog": 4 * 1024 * 1024,
        "mappedFileSizeConsumeQueue": 3000 * 20,
    }
    with start_serve(tmp_path_factory.mktemp("tx-client"), **conf) as proc:
        yield proc


def config(serve: ServerProcess) -> ClientConfig:
    return ClientConfig(namesrv_addrs=[serve.namesrv_addr], poll_namesrv_interval=1.0, heartbeat_interval=0.5)


class Listener:
    """Answers with fixed states and records what it was asked."""

    def __init__(self, execute: LocalTransactionState | Exception, check: LocalTransactionState) -> None:
        self.execute = execute
        self.check = check
        self.executed: list[tuple[bytes, Any]] = []
        self.checked: list[MessageExt] = []

    async def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        self.executed.append((msg.body, arg))
        if isinstance(self.execute, Exception):
            raise self.execute
        return self.execute

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:  # a plain function
        self.checked.append(msg)
        return self.check


async def eventually(
    check: Callable[[], Awaitable[bool] | bool], timeout: float = 15.0, what: str = ""
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.1)


class Reader:
    def __init__(self, serve: ServerProcess) -> None:
        self.serve = serve
        self.instance = ClientInstance(config(serve))

    async def create_topic(self, topic: str) -> None:
        await self.instance.api.create_topic(
            self.serve.broker_addr, topic, read_queue_nums=1, write_queue_nums=1
        )

    async def messages(self, topic: str) -> list[MessageExt]:
        mq = MessageQueue(topic, "broker-a", 0)
        return await drain_queue(self.instance.api, self.serve.broker_addr, mq, group="tx-reader")

    async def bodies(self, topic: str) -> list[bytes]:
        return [m.body for m in await self.messages(topic)]

    async def ended(self, msg_id: str) -> bool:
        """The broker ended (committed or rolled back) a half message of this transaction: an op record
        names one of its half offsets (a check-back re-parks the half under a new offset)."""
        halves = {m.queue_offset for m in await self.messages(HALF_TOPIC) if m.unique_id == msg_id}
        ops = {int(m.body) for m in await self.messages(OP_HALF_TOPIC) if m.tags == "d"}
        return bool(halves & ops)

    async def close(self) -> None:
        await self.instance.shutdown()


@pytest.fixture
async def reader(serve: ServerProcess) -> Reader:
    r = Reader(serve)
    yield r  # type: ignore[misc]
    await r.close()


async def send(
    producer: TransactionProducer, topic: str, body: bytes, arg: Any = None
) -> TransactionSendResult:
    return await producer.send_message_in_transaction(Message(topic, body), arg)


async def test_commit_makes_the_message_visible(serve: ServerProcess, reader: Reader) -> None:
    await reader.create_topic("TxCommit")
    listener = Listener(COMMIT, ROLLBACK)
    async with TransactionProducer("tx-commit", config=config(serve), listener=listener) as producer:
        result = await send(producer, "TxCommit", b"paid", arg={"order": 7})
        assert result.local_transaction_state is COMMIT
        assert listener.executed == [(b"paid", {"order": 7})]
        await eventually(lambda: _has(reader, "TxCommit", [b"paid"]), what="the committed message")
        assert listener.checked == []


class ByBody(Listener):
    """Executes each transaction with the state mapped to its body."""

    def __init__(self, execute: dict[bytes, LocalTransactionState], check: LocalTransactionState) -> None:
        super().__init__(UNKNOW, check)
        self.by_body = execute

    async def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        self.executed.append((msg.body, arg))
        return self.by_body[msg.body]


async def test_rollback_never_shows_and_is_never_checked(serve: ServerProcess, reader: Reader) -> None:
    await reader.create_topic("TxRollback")
    # "pending" (UNKNOW, sent after the rollback) is the positive control: once it has been checked, the
    # check service has scanned past the rolled-back half, which must not have been asked about.
    listener = ByBody({b"cancelled": ROLLBACK, b"pending": UNKNOW}, COMMIT)
    async with TransactionProducer("tx-rollback", config=config(serve), listener=listener) as producer:
        result = await send(producer, "TxRollback", b"cancelled")
        assert result.local_transaction_state is ROLLBACK
        await eventually(lambda: reader.ended(result.msg_id), what="the broker's op record of the rollback")
        await send(producer, "TxRollback", b"pending")
        await eventually(lambda: _has(reader, "TxRollback", [b"pending"]), what="the check-back of pending")
        assert [m.body for m in listener.checked] == [b"pending"]
        assert await reader.bodies("TxRollback") == [b"pending"]


async def test_unknown_is_resolved_by_the_check_back(serve: ServerProcess, reader: Reader) -> None:
    await reader.create_topic("TxUnknown")
    listener = Listener(UNKNOW, COMMIT)
    async with TransactionProducer("tx-unknown", config=config(serve), listener=listener) as producer:
        result = await send(producer, "TxUnknown", b"maybe")
        assert result.local_transaction_state is UNKNOW
        assert await reader.bodies("TxUnknown") == []
        await eventually(lambda: _has(reader, "TxUnknown", [b"maybe"]), what="the check-back to commit")
        (asked,) = listener.checked
        assert asked.topic == "TxUnknown" and asked.body == b"maybe"
        assert asked.properties["UNIQ_KEY"] == result.msg_id
        assert asked.properties["TRANSACTION_CHECK_TIMES"] == "1"


async def test_local_transaction_that_raises_is_checked_later(serve: ServerProcess, reader: Reader) -> None:
    await reader.create_topic("TxRaises")
    listener = Listener(RuntimeError("db down"), ROLLBACK)
    async with TransactionProducer("tx-raises", config=config(serve), listener=listener) as producer:
        result = await send(producer, "TxRaises", b"broken")
        assert result.local_transaction_state is UNKNOW
        await eventually(lambda: len(listener.checked) >= 1, what="the check-back")
        # The check answered ROLLBACK: the broker ended the transaction (op record) without committing.
        await eventually(lambda: reader.ended(result.msg_id), what="the op record of the rollback")
        await send_commit_marker(serve, "TxRaises")
        await eventually(lambda: _has(reader, "TxRaises", [b"marker"]), what="the marker")
        assert await reader.bodies("TxRaises") == [b"marker"]


async def test_producer_restarted_while_unknown(serve: ServerProcess, reader: Reader) -> None:
    await reader.create_topic("TxRestart")
    first = Listener(UNKNOW, UNKNOW)
    async with TransactionProducer("tx-restart", config=config(serve), listener=first) as producer:
        result = await send(producer, "TxRestart", b"in-doubt")
        assert result.local_transaction_state is UNKNOW
    # The producer is gone (unregistered); a new instance of the same group comes up later and knows
    # the outcome.
    await asyncio.sleep(1.0)
    second = Listener(ROLLBACK, COMMIT)
    async with TransactionProducer("tx-restart", config=config(serve), listener=second):
        await eventually(lambda: _has(reader, "TxRestart", [b"in-doubt"]), what="the new producer's commit")
    assert second.checked and second.checked[-1].body == b"in-doubt"
    assert second.executed == []


async def _has(reader: Reader, topic: str, expected: list[bytes]) -> bool:
    return await reader.bodies(topic) == expected


async def send_commit_marker(serve: ServerProcess, topic: str) -> None:
    """An ordinary committed transaction after the one under test: proves the queue is being written."""
    async with TransactionProducer(
        "tx-marker", config=config(serve), listener=Listener(COMMIT, COMMIT)
    ) as producer:
        await send(producer, topic, b"marker")


def test_blocking_facade_with_plain_function_listener(serve: ServerProcess) -> None:
    from orbitmq.client import blocking

    class Plain:
        def __init__(self) -> None:
            self.executed: list[bytes] = []

        def execute_local_transaction(self, msg: Message, arg: Any) -> blocking.LocalTransactionState:
            self.executed.append(msg.body)
            return blocking.LocalTransactionState.COMMIT_MESSAGE

        def check_local_transaction(self, msg: MessageExt) -> blocking.LocalTransactionState:
            return blocking.LocalTransactionState.ROLLBACK_MESSAGE

    async def create_topic() -> None:
        r = Reader(serve)
        try:
            await r.create_topic("TxBlocking")
        finally:
            await r.close()

    asyncio.run(create_topic())
    listener = Plain()
    with blocking.TransactionProducer("tx-blocking", config=config(serve), listener=listener) as producer:
        result = producer.send_message_in_transaction(Message("TxBlocking", b"sync-world"), "arg")
    assert isinstance(result, blocking.TransactionSendResult)
    assert result.local_transaction_state is blocking.LocalTransactionState.COMMIT_MESSAGE
    assert listener.executed == [b"sync-world"]

    async def committed_on_the_broker() -> None:
        r = Reader(serve)
        try:
            await eventually(lambda: _has(r, "TxBlocking", [b"sync-world"]), what="the committed message")
            assert await r.ended(result.msg_id)
        finally:
            await r.close()

    asyncio.run(committed_on_the_broker())
