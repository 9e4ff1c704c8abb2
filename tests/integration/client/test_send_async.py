"""The producer's hot path (send_path.SendCall): send/send_async answered through a connection callback.
Futures carry results, broker refusals, timeouts and connection loss, each exactly once, and leave the
producer's pending set."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest

from orbitmq.client.aio import Message, Producer, SendStatus
from orbitmq.common.errors import BrokerError, ConnectError, RequestTimeoutError
from orbitmq.protocol.bodies_core import TopicRouteData
from orbitmq.protocol.codes import ResponseCode
from orbitmq.testing import ServerProcess, start_broker
from orbitmq.transport import Connection

from .conftest import Admin, broker_conf, client_config, unique


def _broker_connection(producer: Producer, broker: ServerProcess) -> Connection:
    assert producer.instance is not None
    return producer.instance.api.remoting.connections[broker.broker_addr]


async def test_send_async_futures_carry_results_and_refusals(tmp_path: Path, namesrv: ServerProcess) -> None:
    topic = unique("Futures")
    with start_broker(
        tmp_path, namesrv.address, expect=("broker",), maxMessageSize=2000, **broker_conf()
    ) as b:
        async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
            await admin.create_topic(topic, [b], queues=4)
            await producer.send(Message.create(topic, "route and connection"))
            window = [producer.send_async(Message.create(topic, f"w{i}")) for i in range(30)]
            # Route, address and connection were at hand: futures answered by the connection, no Task.
            assert not any(isinstance(f, asyncio.Task) for f in window)
            assert len(producer.path.pending) == 30
            results = await asyncio.wait_for(asyncio.gather(*window), 20)
            assert all(r.status is SendStatus.SEND_OK for r in results)
            assert len({r.msg_id for r in results}) == 30
            assert {r.message_queue.queue_id for r in results} == {0, 1, 2, 3}
            assert all(r.message_queue.topic == topic for r in results)
            assert not producer.path.pending

            # The broker refuses a body over its maxMessageSize: not retryable, the future fails with it.
            too_big = [producer.send_async(Message.create(topic, b"x" * 3000)) for _ in range(3)]
            for outcome in await asyncio.wait_for(asyncio.gather(*too_big, return_exceptions=True), 20):
                assert isinstance(outcome, BrokerError) and outcome.code == ResponseCode.MESSAGE_ILLEGAL
            with pytest.raises(BrokerError):
                await producer.send(Message.create(topic, b"x" * 3000))
            assert not producer.path.pending and _broker_connection(producer, b).pending_count == 0

            stored = await admin.read_topic(topic)
            assert sorted(m.body for m in stored) == sorted(
                [b"route and connection"] + [f"w{i}".encode() for i in range(30)]
            )
            by_id = {m.msg_id: m for m in stored}
            for r in results:
                assert by_id[r.msg_id].queue_id == r.message_queue.queue_id
                assert by_id[r.msg_id].queue_offset == r.queue_offset


async def test_pending_futures_time_out_then_fail_on_connection_loss(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic = unique("Lost")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker])
        producer = Producer("PG", config=client_config(namesrv), retry_times=2, retry_times_async=2)
        async with producer:
            await producer.send(Message.create(topic, "warm"))
            os.kill(broker.pid, signal.SIGSTOP)  # the connection stays open, nothing is answered
            try:
                timing_out = [producer.send_async(Message.create(topic, "t"), timeout=0.5) for _ in range(5)]
                synced = asyncio.ensure_future(producer.send(Message.create(topic, "s"), timeout=0.5))
                outcomes = await asyncio.wait_for(
                    asyncio.gather(*timing_out, synced, return_exceptions=True), 20
                )
                assert all(isinstance(o, RequestTimeoutError) for o in outcomes), outcomes
                assert not producer.path.pending.intersection(timing_out)  # (route refreshes may be there)

                lost = [producer.send_async(Message.create(topic, "l"), timeout=30) for _ in range(10)]
                conn = _broker_connection(producer, broker)
                assert conn.pending_count == 10
                broker.kill()  # the connection breaks; retries find the broker gone
                outcomes = await asyncio.wait_for(asyncio.gather(*lost, return_exceptions=True), 20)
                assert all(isinstance(o, ConnectError) for o in outcomes), outcomes
                assert not producer.path.pending.intersection(lost)
                assert conn.closed and conn.pending_count == 0
            finally:
                with contextlib.suppress(ProcessLookupError):  # (killed above, unless a check failed)
                    os.kill(broker.pid, signal.SIGCONT)


async def test_a_window_to_a_new_topic_shares_one_route_query(tmp_path: Path, namesrv: ServerProcess) -> None:
    # 100 send_async calls before the producer knows the topic's route: they wait for one nameserver
    # query together (one query each, serialized behind the route lock, took ~0.5 s for 256 sends).
    topic = unique("NewTopicWindow")
    with start_broker(tmp_path, namesrv.address, expect=("broker",), **broker_conf()) as b:
        async with Admin(namesrv) as admin, Producer("PG", config=client_config(namesrv)) as producer:
            await admin.create_topic(topic, [b], queues=4)
            assert producer.instance is not None
            api = producer.instance.api
            real = api.get_topic_route
            asked: list[str] = []

            async def counting(name: str, timeout: float | None = None) -> TopicRouteData | None:
                asked.append(name)
                return await real(name, timeout)

            api.get_topic_route = counting  # type: ignore[method-assign,assignment]
            window = [producer.send_async(Message.create(topic, f"n{i}")) for i in range(100)]
            results = await asyncio.wait_for(asyncio.gather(*window), 20)
            assert all(r.status is SendStatus.SEND_OK for r in results)
            # one for the window (the client's periodic route refresh may add its own, once)
            assert 1 <= asked.count(topic) <= 2
            stored = await admin.read_topic(topic)
            assert sorted(m.body for m in stored) == sorted(f"n{i}".encode() for i in range(100))
