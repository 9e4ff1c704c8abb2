"""Request-reply through a real `orbitmq serve` with orbitmq's own clients: a requester's
`request()` gets the responder's reply (pushed by the broker with PUSH_REPLY_MESSAGE_TO_CLIENT after
SEND_REPLY_MESSAGE_V2), concurrent requests get their own replies, the reply is also stored in
`<cluster>_REPLY_TOPIC` (storeReplyMessageEnable), a reply sent oneway is pushed as well, an
unanswered request times out, and a reply whose requester is gone is refused with the broker's
reason."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from orbitmq.client.aio import (
    ConsumeConcurrentlyContext,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    create_reply_message,
)
from orbitmq.common.errors import BrokerError, RequestTimeoutError
from orbitmq.message import properties as P
from orbitmq.testing import ServerProcess
from orbitmq.testing.launch import start_serve

from .conftest import Admin, client_config, unique

SMALL = {"mappedFileSizeCommitLog": 4 * 1024 * 1024, "mappedFileSizeConsumeQueue": 20 * 6000}


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_serve(tmp_path_factory.mktemp("reqrep"), **SMALL) as proc:
        yield proc


async def _topic(serve: ServerProcess) -> str:
    topic = unique("req")
    async with Admin(serve) as admin:
        await admin.create_topic(topic, [serve], queues=2)
    return topic


@contextlib.asynccontextmanager
async def _responder(serve: ServerProcess, topic: str, *, oneway: bool = False) -> AsyncIterator[Producer]:
    """A consumer of `topic` answering every request with "re: <body>" (sent oneway if asked), and a
    requester to yield."""
    reply_producer = Producer(unique("rp"), config=client_config(serve))
    await reply_producer.start()

    async def respond(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        for m in msgs:
            reply = create_reply_message(m, b"re: " + m.body)
            if oneway:
                await reply_producer.send_oneway(reply)
            else:
                await reply_producer.send(reply)
        return ConsumeStatus.CONSUME_SUCCESS

    responder = PushConsumer(
        unique("rg"), config=client_config(serve), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    responder.subscribe(topic, "*")
    responder.register_listener(respond)
    await responder.start()
    requester = Producer(unique("qp"), config=client_config(serve))
    await requester.start()
    try:
        yield requester
    finally:
        await requester.shutdown()
        await responder.shutdown()
        await reply_producer.shutdown()


async def test_request_gets_the_responders_reply(serve: ServerProcess) -> None:
    topic = await _topic(serve)
    async with _responder(serve, topic) as requester:
        reply = await requester.request(Message(topic, b"ping"), timeout=15)
        assert reply.body == b"re: ping"
        assert reply.topic == "DefaultCluster_REPLY_TOPIC"
        assert reply.properties[P.MSG_TYPE] == "reply"
        assert P.PUSH_REPLY_TIME in reply.properties
        # several at once: each request gets its own reply
        bodies = [f"q{i}".encode() for i in range(5)]
        tasks = [requester.request_async(Message(topic, b), timeout=15) for b in bodies]
        replies = await asyncio.gather(*tasks)
        assert [r.body for r in replies] == [b"re: " + b for b in bodies]
        assert not requester.path.require_instance().replies.futures  # nothing left waiting
        # storeReplyMessageEnable (default true): the replies are in the reply topic too
        async with Admin(serve) as admin:
            stored = await admin.read_topic("DefaultCluster_REPLY_TOPIC")
        assert {m.body for m in stored} >= {b"re: ping", *(b"re: " + b for b in bodies)}


async def test_a_reply_sent_oneway_reaches_the_requester(serve: ServerProcess) -> None:
    # Java's producer picks SEND_REPLY_MESSAGE_V2 by the message, whatever the mode: a reply sent oneway
    # must be pushed to its requester too (as SEND_MESSAGE_V2 it would only be stored).
    topic = await _topic(serve)
    async with _responder(serve, topic, oneway=True) as requester:
        reply = await requester.request(Message(topic, b"ping"), timeout=15)
        assert reply.body == b"re: ping"
        assert reply.properties[P.MSG_TYPE] == "reply"


async def test_unanswered_request_times_out(serve: ServerProcess) -> None:
    topic = await _topic(serve)
    requester = Producer(unique("qp"), config=client_config(serve))
    await requester.start()
    try:
        with pytest.raises(RequestTimeoutError, match="no reply"):
            await requester.request(Message(topic, b"nobody listens"), timeout=1.0)
        assert not requester.path.require_instance().replies.futures
    finally:
        await requester.shutdown()


async def test_reply_to_a_gone_requester_is_refused(serve: ServerProcess) -> None:
    producer = Producer(unique("rp"), config=client_config(serve), retry_times=0)
    await producer.start()
    try:
        request = Message(
            "any",
            b"x",
            properties={
                P.CLUSTER: "DefaultCluster",
                P.REPLY_TO_CLIENT: "10.9.9.9@gone",
                P.CORRELATION_ID: "c1",
                P.TTL: "3000",
            },
        )
        with pytest.raises(BrokerError, match=r"channel of <10\.9\.9\.9@gone> not found"):
            await producer.send(create_reply_message(request, b"late"))
    finally:
        await producer.shutdown()
