"""The blocking Producer's first attempt on the caller's own thread (client/direct_send.py), against a
real broker: many threads each on their own socket, every message stored once; a broken socket sends on
the loop instead, once; the sockets of ended threads and, at shutdown, all sockets are closed."""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading

import pytest

from orbitmq import Message, Producer
from orbitmq.client import blocking
from orbitmq.client.blocking import SendStatus
from orbitmq.testing import ServerProcess

from .conftest import Admin, client_config, unique

QUEUES = 4


async def test_threads_send_on_their_own_sockets_and_each_message_is_stored_once(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic = unique("Direct")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=QUEUES)
        producer = Producer(unique("DPG"), config=client_config(namesrv))
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
    topic = unique("DirectBroken")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=QUEUES)
        producer = Producer(unique("DPB"), config=client_config(namesrv))

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
    topic = unique("DirectOnLoop")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=QUEUES)
    producer = Producer(unique("DPL"), config=client_config(namesrv))

    def scenario() -> None:
        producer.start()
        try:
            producer.send(Message.create(topic, "routes"))  # later sends could go direct
            outcome: concurrent.futures.Future[None] = concurrent.futures.Future()

            def on_the_loop() -> None:
                try:
                    producer.send(Message.create(topic, "from the loop"))
                    outcome.set_result(None)
                except BaseException as exc:
                    outcome.set_exception(exc)

            blocking._loop().loop.call_soon_threadsafe(on_the_loop)
            with pytest.raises(RuntimeError, match="cannot be called from the client loop"):
                outcome.result(10)
        finally:
            producer.shutdown()

    await asyncio.to_thread(scenario)


async def test_oneway_sends_leave_from_the_callers_thread_and_a_broken_socket_falls_back(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic = unique("DirectOneway")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=QUEUES)
        producer = Producer(unique("DPO"), config=client_config(namesrv))

        def scenario() -> None:
            producer.start()
            try:
                producer.send(Message.create(topic, "routes"))
                for i in range(200):
                    producer.send_oneway(Message.create(topic, f"o{i}"))
                [sock] = producer._direct._open  # written from this thread
                sock.shutdown(socket.SHUT_RDWR)
                producer.send_oneway(Message.create(topic, "after the break"))  # through the loop
                assert sock not in producer._direct._open
            finally:
                producer.shutdown()

        await asyncio.to_thread(scenario)
        wanted = sorted(["routes", "after the break"] + [f"o{i}" for i in range(200)])
        bodies: list[str] = []
        for _ in range(100):  # oneway: stored without an answer, so read until all came
            bodies = sorted(m.body.decode() for m in await admin.read_topic(topic))
            if len(bodies) >= len(wanted):
                break
            await asyncio.sleep(0.1)
        assert bodies == wanted
