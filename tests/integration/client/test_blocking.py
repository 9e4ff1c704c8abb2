"""The blocking facade (`from orbitmq import Producer, PushConsumer, LitePullConsumer, Message`) with
plain-function listeners on the consumer's thread pool."""

from __future__ import annotations

import threading
import time

from orbitmq import LitePullConsumer, Message, MessageExt, Producer, PushConsumer
from orbitmq.client.blocking import ConsumeStatus, SendResult, SendStatus, shutdown_loop
from orbitmq.testing import ServerProcess

from .conftest import Admin, client_config, unique


def wait_for(check: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


async def test_blocking_producer_and_consumers(namesrv: ServerProcess, broker: ServerProcess) -> None:
    topic, group = unique("Blocking"), unique("BLG")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker])

    # The blocking API is for threads without a loop: drive it from one.
    errors: list[BaseException] = []

    def scenario() -> None:
        try:
            received: list[bytes] = []
            threads: set[str] = set()

            def listener(msgs: list[MessageExt], ctx: object) -> ConsumeStatus:
                received.extend(m.body for m in msgs)
                threads.add(threading.current_thread().name)
                return ConsumeStatus.CONSUME_SUCCESS

            with Producer("BPG", config=client_config(namesrv)) as producer:
                result = producer.send(Message.create(topic, "sync"))
                assert result.status is SendStatus.SEND_OK
                callbacks: list[SendResult | None] = []
                future = producer.send_async(Message.create(topic, "async"), lambda r, e: callbacks.append(r))
                assert future.result(10).status is SendStatus.SEND_OK
                producer.send_oneway(Message.create(topic, "oneway"))
                producer.send_batch([Message.create(topic, f"batch{i}") for i in range(3)])
                wait_for(lambda: len(callbacks) == 1)

                consumer = PushConsumer(
                    group, config=client_config(namesrv), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
                )
                consumer.subscribe(topic, "*")
                consumer.register_listener(listener)
                with consumer:
                    wait_for(lambda: len(received) >= 6)
                assert set(received) == {b"sync", b"async", b"oneway", b"batch0", b"batch1", b"batch2"}
                assert all(name.startswith("orbitmq-consume") for name in threads)

                with LitePullConsumer(
                    unique("BLP"),
                    config=client_config(namesrv),
                    consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                ) as lite:
                    pass  # started and stopped cleanly without a subscription or assignment
                lite_sub = LitePullConsumer(
                    unique("BLS"),
                    config=client_config(namesrv),
                    consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                )
                lite_sub.subscribe(topic)
                with lite_sub:
                    polled: list[bytes] = []
                    wait_for(lambda: polled.extend(m.body for m in lite_sub.poll(0.2)) or len(polled) >= 6)
                assert set(polled) == set(received)
                assert lite is not None
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=scenario)
    thread.start()
    thread.join(60)
    shutdown_loop()
    assert not thread.is_alive()
    if errors:
        raise errors[0]
