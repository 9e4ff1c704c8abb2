"""A client whose nameserver does not answer says so, in the error and in the log.

Decision (documented in the README): a producer's send raises `NamesrvUnreachableError` ("cannot reach
any nameserver: 127.0.0.1:P connection refused") instead of RocketMQ's misleading "No route info"; a
consumer's start() succeeds as RocketMQ's does (it keeps retrying and consumes once a nameserver
answers, so it may start before the servers) but logs a WARNING naming every address and why, which
Python prints even when logging is not configured.
"""

from __future__ import annotations

import logging
import re

import pytest

from orbitmq.admin.api import AdminClient
from orbitmq.client.aio import LitePullConsumer, Producer, PushConsumer
from orbitmq.client.api import NamesrvUnreachableError
from orbitmq.message.model import Message
from orbitmq.testing import ServerProcess
from orbitmq.testing.cluster import free_port

from .conftest import unique


def dead_address() -> str:
    return f"127.0.0.1:{free_port()}"  # bound and released: nothing listens there


def unreachable_warnings(caplog: pytest.LogCaptureFixture, addr: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
        and f"cannot reach any nameserver: {addr} connection refused" in r.getMessage()
    ]


async def test_send_names_the_unreachable_nameserver(caplog: pytest.LogCaptureFixture) -> None:
    dead = dead_address()
    producer = Producer(unique("PG"), dead)
    await producer.start()
    try:
        with pytest.raises(NamesrvUnreachableError) as info:
            await producer.send(Message.create("Orders", b"x"))
    finally:
        await producer.shutdown()
    assert str(info.value) == f"cannot reach any nameserver: {dead} connection refused"
    [warning] = unreachable_warnings(caplog, dead)  # once per outage, not per attempt
    # What failed first, then what happens next; no periodic retry is promised for a topic the
    # producer forgets once its send failed.
    assert warning == f"cannot reach any nameserver: {dead} connection refused; the next send asks again"


async def test_several_nameservers_are_all_named(namesrv: ServerProcess) -> None:
    dead1, dead2 = dead_address(), dead_address()
    producer = Producer(unique("PG"), f"{dead1};{dead2}")
    await producer.start()
    try:
        with pytest.raises(
            NamesrvUnreachableError,
            match=re.escape(f"{dead1} connection refused; {dead2} connection refused"),
        ):
            await producer.send(Message.create("Orders", b"x"))
    finally:
        await producer.shutdown()
    # positive control: one live nameserver in the list and the same send gets a route
    producer = Producer(unique("PG"), f"{dead1};{namesrv.address}")
    await producer.start()
    try:
        with pytest.raises(Exception) as other:  # no broker registered: a route problem, not reachability
            await producer.send(Message.create("Orders", b"x"))
        assert not isinstance(other.value, NamesrvUnreachableError)
        assert "No route info" in str(other.value)
    finally:
        await producer.shutdown()


@pytest.mark.parametrize("kind", ["push", "lite-pull"])
async def test_consumer_start_warns_when_no_nameserver_answers(
    kind: str, caplog: pytest.LogCaptureFixture, namesrv: ServerProcess
) -> None:
    for addr, expect_warning in ((dead_address(), True), (namesrv.address, False)):
        caplog.clear()
        consumer: PushConsumer | LitePullConsumer
        if kind == "push":
            consumer = PushConsumer(unique("CG"), addr)
            consumer.register_listener(lambda msgs, ctx: "CONSUME_SUCCESS")
        else:
            consumer = LitePullConsumer(unique("CG"), addr)
        consumer.subscribe("Orders", "*")
        await consumer.start()  # returns: RocketMQ's consumers start without a nameserver too
        await consumer.shutdown()
        warnings = unreachable_warnings(caplog, addr)
        assert bool(warnings) is expect_warning, caplog.text
        for warning in warnings:  # the subscribed topic is asked for again: say so
            assert warning.startswith("cannot reach any nameserver: ")
            assert warning.endswith("asking again every 30 s for the routes of Orders"), warning


async def test_admin_names_the_unreachable_nameserver() -> None:
    dead = dead_address()
    async with AdminClient(dead, timeout=2.0) as admin:
        with pytest.raises(
            NamesrvUnreachableError,
            match=re.escape(f"cannot reach any nameserver: {dead} connection refused"),
        ):
            await admin.cluster_info()
