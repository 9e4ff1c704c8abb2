"""The blocking Producer's first attempt on the caller's own thread (client/direct_send.py), against a
real broker: many threads each on their own socket, every message stored once; a broken socket sends on
the loop instead, once; the sockets of ended threads and, at shutdown, all sockets are closed. Sends to
a chosen queue (queue, selector, send_orderly) go from the caller's thread too, the selector called
there once; a socket the broker closed is looked at before it is used; sockets idle too long or to a
broker that moved are swept. A thread polls for its answers before blocking, the window learnt per socket
from when they came; at 0 it never polls."""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from orbitmq import Message, Producer
from orbitmq.client.blocking import SendStatus
from orbitmq.client.loop_thread import client_loop
from orbitmq.common.errors import ClientError, ConnectError
from orbitmq.message.model import MessageQueue
from orbitmq.testing import ServerProcess, start_broker
from orbitmq.transport.busy_poll import GROW_START

from .conftest import Admin, broker_conf, client_config, eventually, topic_and_blocking_producer, unique

QUEUES = 4


async def test_threads_send_on_their_own_sockets_and_each_message_is_stored_once(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "Direct") as (admin, topic, producer):
        await asyncio.to_thread(producer.start)
        try:
            first = await asyncio.to_thread(producer.send, Message.create(topic, "first"))  # routes it
            assert first.status is SendStatus.SEND_OK
            ids: list[str] = []
            errors: list[BaseException] = []

            def sender(n: int) -> None:
                try:
                    for i in range(100):
                        result = producer.send(Message.create(topic, f"t{n}-{i}"))
                        assert result.status is SendStatus.SEND_OK and result.message_queue is not None
                        ids.append(result.msg_id)
                except BaseException as exc:  # reported by the test thread
                    errors.append(exc)

            threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
            await asyncio.to_thread(lambda: [t.start() for t in threads] and [t.join(60) for t in threads])
            assert not errors, errors
            assert len(set(ids)) == 400
            # One socket per sending thread (the broker is one address), none through the loop.
            sockets = list(producer._direct._open)
            assert len(sockets) == 4
            # The four threads ended: the next thread to open a socket closes theirs.
            await asyncio.to_thread(producer.send, Message.create(topic, "last"))
            assert all(s.fileno() == -1 for s in sockets) and len(producer._direct._open) == 1
            bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
            sent = ["first", "last"] + [f"t{n}-{i}" for n in range(4) for i in range(100)]
            assert bodies == sorted(sent)
        finally:
            await asyncio.to_thread(producer.shutdown)


async def test_a_broken_socket_sends_on_the_loop_once_and_shutdown_closes_the_sockets(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "DirectBroken") as (admin, topic, producer):

        def scenario() -> list[socket.socket]:
            producer.start()
            producer.send(Message.create(topic, "routes"))
            producer.send(Message.create(topic, "direct"))
            [sock] = producer._direct._open
            sock.shutdown(socket.SHUT_RDWR)  # the next write on it fails before anything leaves
            result = producer.send(Message.create(topic, "after the break"))
            assert result.status is SendStatus.SEND_OK
            assert sock not in producer._direct._open  # dropped; the next send opens another
            producer.send(Message.create(topic, "direct again"))
            opened = list(producer._direct._open)
            assert len(opened) == 1 and opened[0] is not sock
            producer.shutdown()
            return opened

        opened = await asyncio.to_thread(scenario)
        assert not producer._direct._open and opened[0].fileno() == -1  # closed by shutdown
        bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
        assert bodies == sorted(["routes", "direct", "after the break", "direct again"])  # each once


async def test_a_blocking_send_from_the_client_loop_is_refused(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "DirectOnLoop") as (_, topic, producer):

        def scenario() -> None:
            with producer:
                producer.send(Message.create(topic, "routes"))  # later sends could go direct
                outcome: concurrent.futures.Future[None] = concurrent.futures.Future()

                def on_the_loop() -> None:
                    try:
                        producer.send(Message.create(topic, "from the loop"))
                        outcome.set_result(None)
                    except BaseException as exc:
                        outcome.set_exception(exc)

                client_loop().loop.call_soon_threadsafe(on_the_loop)
                with pytest.raises(RuntimeError, match="cannot be called from the client loop"):
                    outcome.result(10)

        await asyncio.to_thread(scenario)


async def test_oneway_sends_leave_from_the_callers_thread_and_a_broken_socket_falls_back(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "DirectOneway") as (admin, topic, producer):

        def scenario() -> None:
            with producer:
                producer.send(Message.create(topic, "routes"))
                for i in range(200):
                    producer.send_oneway(Message.create(topic, f"o{i}"))
                [sock] = producer._direct._open  # written from this thread
                sock.shutdown(socket.SHUT_RDWR)
                producer.send_oneway(Message.create(topic, "after the break"))  # through the loop
                assert sock not in producer._direct._open

        await asyncio.to_thread(scenario)
        wanted = sorted(["routes", "after the break"] + [f"o{i}" for i in range(200)])
        bodies: list[str] = []
        for _ in range(100):  # oneway: stored without an answer, so read until all came
            bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
            if len(bodies) >= len(wanted):
                break
            await asyncio.sleep(0.1)
        assert bodies == wanted


async def test_sends_to_a_chosen_queue_leave_from_the_callers_thread_and_the_selector_runs_there_once(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "DirectChosen") as (admin, topic, producer):
        calls: list[threading.Thread] = []

        def by_number(queues: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
            calls.append(threading.current_thread())
            return queues[int(arg) % len(queues)]

        def elsewhere(queues: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
            return MessageQueue(topic, "no-such-broker", 0)

        def scenario() -> dict[str, MessageQueue]:
            with producer:
                producer.send(Message.create(topic, "routes"))
                chosen: dict[str, MessageQueue] = {}
                for i in range(40):
                    result = producer.send(Message.create(topic, f"s{i}"), selector=by_number, arg=i)
                    assert result.status is SendStatus.SEND_OK and result.message_queue is not None
                    assert result.message_queue.queue_id == i % QUEUES
                    chosen[f"s{i}"] = result.message_queue
                target = chosen["s1"]
                for i in range(10):
                    result = producer.send(Message.create(topic, f"q{i}"), queue=target)
                    assert result.message_queue == target
                    chosen[f"q{i}"] = target
                for i in range(20):
                    result = producer.send_orderly(Message.create(topic, f"k{i}"), key=f"key{i % 3}")
                    assert result.message_queue is not None
                    chosen[f"k{i}"] = result.message_queue
                with pytest.raises(ClientError, match="not a queue of"):
                    producer.send(Message.create(topic, "nowhere"), selector=elsewhere)
                # Everything above left on this thread's one socket, none through the loop.
                lines = list(producer._direct._open.values())
                assert [line.thread for line in lines] == [threading.current_thread()]
                return chosen

        chosen = await asyncio.to_thread(scenario)
        assert len(calls) == 40 and {id(t) for t in calls} == {id(calls[0])}  # once each, on the caller
        assert calls[0] is not client_loop().thread
        for key in range(3):  # one queue per key
            assert len({chosen[f"k{i}"] for i in range(20) if i % 3 == key}) == 1
        stored: dict[str, MessageQueue] = {}
        for queue_id in range(QUEUES):
            mq = MessageQueue(topic, target_broker(chosen), queue_id)
            for m in await admin.read_queue(mq):
                assert m.body.decode() not in stored  # each once
                stored[m.body.decode()] = mq
        del stored["routes"]
        assert stored == chosen


def target_broker(chosen: dict[str, MessageQueue]) -> str:
    [name] = {mq.broker_name for mq in chosen.values()}
    return name


async def test_a_socket_the_broker_closed_is_looked_at_before_a_send_to_a_chosen_queue(
    tmp_path: Path, namesrv: ServerProcess
) -> None:
    topic = unique("DirectIdleClosed")
    conf = {**broker_conf(), "serverChannelMaxIdleTimeSeconds": 1}
    with start_broker(tmp_path, namesrv.address, **conf) as broker:
        async with Admin(namesrv) as admin:
            await admin.create_topic(topic, [broker], queues=QUEUES)
        producer = Producer(unique("DPI"), config=client_config(namesrv))

        def scenario() -> None:
            with producer:
                [mq] = [q for q in producer.fetch_publish_message_queues(topic) if q.queue_id == 2]
                assert producer.send(Message.create(topic, "first"), queue=mq).status is SendStatus.SEND_OK
                [first] = producer._direct._open
                time.sleep(2.5)  # the broker closes connections idle for 1 s (it looks every 0.25 s)
                # One attempt only (a chosen queue): it must not be made on the socket the broker closed.
                assert producer.send(Message.create(topic, "second"), queue=mq).status is SendStatus.SEND_OK
                assert first.fileno() == -1
                [second] = producer._direct._open
                assert second is not first

        await asyncio.to_thread(scenario)


async def test_sockets_idle_too_long_or_to_a_broker_that_moved_are_swept(
    tmp_path: Path, namesrv: ServerProcess
) -> None:
    topic = unique("DirectSweep")
    config = client_config(namesrv, poll_namesrv_interval=0.2, direct_socket_max_idle=0.5)
    producer = Producer(unique("DPS"), config=config)
    release = threading.Event()
    opened: list[Any] = []

    def send_and_stay(body: str) -> None:
        producer.send(Message.create(topic, body))
        mine = threading.current_thread()
        opened.extend(s for s, line in list(producer._direct._open.items()) if line.thread is mine)
        release.wait(30)  # alive, with its socket

    with start_broker(tmp_path, namesrv.address, **broker_conf()) as first:
        async with Admin(namesrv) as admin:
            await admin.create_topic(topic, [first], queues=QUEUES)
        await asyncio.to_thread(producer.start)
        await asyncio.to_thread(producer.send, Message.create(topic, "routes"))
        stays = threading.Thread(target=send_and_stay, args=("a",))
        stays.start()
        await eventually(lambda: len(opened) == 1, what="the first thread's send")
        await asyncio.sleep(0.8)  # its socket is idle longer than direct_socket_max_idle
        await asyncio.to_thread(producer.send, Message.create(topic, "b"))  # another thread opens one
        assert opened[0].fileno() == -1 and opened[0] not in producer._direct._open  # swept, thread alive
        release.set()
        stays.join(30)
        old_address = first.address
        before_restart = list(producer._direct._open)
        config.direct_socket_max_idle = 60.0  # from here on only the address can sweep them
    # The same broker (name and store) back on another port: the route moves, the old sockets go.
    with start_broker(tmp_path, namesrv.address, **broker_conf()) as moved:
        assert moved.address != old_address
        instance = producer.aio.instance
        assert instance is not None
        await eventually(lambda: instance.master_address("broker-a") == moved.address, what="the new route")
        result = await asyncio.to_thread(producer.send, Message.create(topic, "c"))
        assert result.status is SendStatus.SEND_OK
        assert all(s.fileno() == -1 for s in before_restart)
        assert {line.addr for line in producer._direct._open.values()} == {moved.address}
        async with Admin(namesrv) as admin:
            bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
        await asyncio.to_thread(producer.shutdown)
    assert bodies == ["a", "b", "c", "routes"]


async def test_a_batch_leaves_from_the_callers_thread_and_a_broken_socket_sends_it_on_the_loop_once(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "DirectBatch") as (admin, topic, producer):

        def scenario() -> list[int]:
            with producer:
                producer.send(Message.create(topic, "routes"))
                counts = []
                for n in range(5):
                    result = producer.send_batch([Message.create(topic, f"b{n}-{i}") for i in range(20)])
                    assert result.status is SendStatus.SEND_OK and len(result.msg_id.split(",")) == 20
                    counts.append(len(result.msg_id.split(",")))
                lines = list(producer._direct._open.values())
                assert [line.thread for line in lines] == [threading.current_thread()]  # not the loop
                [sock] = producer._direct._open
                sock.shutdown(socket.SHUT_RDWR)  # the next write on it fails before anything leaves
                result = producer.send_batch([Message.create(topic, f"after-{i}") for i in range(3)])
                assert result.status is SendStatus.SEND_OK
                assert sock not in producer._direct._open
                [mq] = [q for q in producer.fetch_publish_message_queues(topic) if q.queue_id == 3]
                assert producer.send_batch([Message.create(topic, "fixed")], queue=mq).message_queue == mq
                return counts

        assert await asyncio.to_thread(scenario) == [20] * 5
        bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
        sent = ["routes", "fixed"] + [f"b{n}-{i}" for n in range(5) for i in range(20)]
        assert bodies == sorted(sent + [f"after-{i}" for i in range(3)])  # each once


async def test_a_failed_send_to_a_chosen_queue_is_raised_not_sent_elsewhere(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    async with topic_and_blocking_producer(namesrv, broker, "DirectChosenFails") as (admin, topic, producer):

        def scenario() -> None:
            with producer:
                [mq] = [q for q in producer.fetch_publish_message_queues(topic) if q.queue_id == 1]
                assert producer.send(Message.create(topic, "before"), queue=mq).message_queue == mq
                [sock] = producer._direct._open
                sock.shutdown(socket.SHUT_RDWR)  # the next write on it fails before anything leaves
                # One attempt, as `aio.Producer.send(queue=...)` makes: the failure is the caller's.
                with pytest.raises(ConnectError):
                    producer.send(Message.create(topic, "lost"), queue=mq)
                assert producer.send(Message.create(topic, "after"), queue=mq).message_queue == mq

        await asyncio.to_thread(scenario)
        bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
        assert bodies == ["after", "before"]  # the failed one was sent nowhere else


@pytest.mark.parametrize("limit_us", [50_000.0, 0.0])
async def test_a_thread_polls_for_its_answers_with_a_learnt_window_unless_told_not_to(
    namesrv: ServerProcess, broker: ServerProcess, limit_us: float
) -> None:
    topic = unique("DirectPoll")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=QUEUES)
        # (a limit every answer comes within, even on a busy box; 0: never poll)
        config = client_config(namesrv, busy_poll_us=limit_us)
        producer = Producer(unique("DirectPollGroup"), config=config)

        def scenario() -> list[str]:
            producer.start()
            try:
                ids = [producer.send(Message.create(topic, f"m{i}")).msg_id for i in range(50)]
                [line] = producer._direct._open.values()
                if limit_us:
                    # The first answers came after the first windows: it grew until they were caught.
                    assert line.limit == pytest.approx(limit_us / 1e6) and line.window > GROW_START
                else:
                    assert line.limit == 0.0 and line.window == 0.0
                return ids
            finally:
                producer.shutdown()

        ids = await asyncio.to_thread(scenario)
        assert len(set(ids)) == 50
        bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
        assert bodies == sorted(f"m{i}" for i in range(50))
