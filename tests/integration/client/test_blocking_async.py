"""The blocking Producer's send_async (client/async_handoff.py), against a real broker: sends queued
while the loop is busy start in one drain, each future and callback gets its own outcome on the loop,
an error arrives through the future, and a send cancelled before its drain is not sent."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

from orbitmq import Message
from orbitmq.client.blocking import SendResult, SendStatus
from orbitmq.client.loop_thread import client_loop
from orbitmq.common.errors import ClientError
from orbitmq.testing import ServerProcess

from .conftest import topic_and_blocking_producer


def _hold_the_loop(seconds: float) -> None:
    """Keep the client loop busy for a while (its queued sends wait for the next drain)."""
    started = threading.Event()

    def busy() -> None:
        started.set()
        time.sleep(seconds)

    client_loop().loop.call_soon_threadsafe(busy)
    started.wait(10)


async def test_sends_queued_while_the_loop_is_busy_start_in_one_drain_and_each_gets_its_outcome(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "Async") as (admin, topic, producer):
        callbacks: list[tuple[str, threading.Thread]] = []

        def on_done(result: SendResult | None, error: BaseException | None) -> None:
            assert result is not None and error is None
            callbacks.append((result.msg_id, threading.current_thread()))

        def scenario() -> list[concurrent.futures.Future[SendResult]]:
            with producer:
                producer.send(Message.create(topic, "routes"))
                _hold_the_loop(0.3)
                futures = [producer.send_async(Message.create(topic, f"a{i}"), on_done) for i in range(100)]
                handoff = producer._handoff
                assert handoff is not None and handoff.drains == 0  # all queued behind the busy loop
                done, _ = concurrent.futures.wait(futures, timeout=30)
                assert len(done) == 100
                assert handoff.drains == 1  # one wake-up started all of them
                return futures

        futures = await asyncio.to_thread(scenario)
        results = [f.result() for f in futures]
        assert all(r.status is SendStatus.SEND_OK for r in results)
        assert len({r.msg_id for r in results}) == 100
        assert sorted(msg_id for msg_id, _ in callbacks) == sorted(r.msg_id for r in results)
        assert {thread for _, thread in callbacks} == {client_loop().thread}  # on the client loop
        bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
        assert bodies == sorted(["routes"] + [f"a{i}" for i in range(100)])  # each once


async def test_an_error_arrives_through_the_future_and_a_cancelled_send_is_not_sent(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "AsyncCancel") as (admin, topic, producer):
        outcomes: list[tuple[SendResult | None, BaseException | None]] = []

        def scenario() -> None:
            with producer:
                producer.send(Message.create(topic, "routes"))
                bad = producer.send_async(Message(topic, b""), lambda r, e: outcomes.append((r, e)))
                try:
                    bad.result(10)
                    raise AssertionError("an empty body was sent")
                except ClientError:
                    pass
                _hold_the_loop(0.3)
                cancelled = producer.send_async(Message.create(topic, "cancelled"))
                kept = producer.send_async(Message.create(topic, "kept"))
                assert cancelled.cancel()  # before its drain
                assert kept.result(30).status is SendStatus.SEND_OK

        await asyncio.to_thread(scenario)
        [(result, error)] = outcomes
        assert result is None and isinstance(error, ClientError)
        bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
        assert bodies == ["kept", "routes"]
