"""The official 5.x PushConsumer over the endpoint: QueryAssignment, auto-renewed receives, ack on
success, and on failure a change of invisible duration by the server's backoff (the broker's delay
levels: 1 s in these tests) and a redelivery with the attempt counted."""

from __future__ import annotations

import threading
import time

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
)
from rocketmq import PushConsumer as PushConsumer5

from .conftest import GrpcServe, unique
from .test_send import message, producer


class Listener(MessageListener):
    """Fails each message body's first delivery when it starts with "fail", takes everything else."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[bytes, int]] = []
        self.lock = threading.Lock()

    def consume(self, message: Message) -> ConsumeResult:
        with self.lock:
            self.deliveries.append((message.body, message.delivery_attempt))
        if message.body.startswith(b"fail") and message.delivery_attempt == 1:
            return ConsumeResult.FAILURE
        return ConsumeResult.SUCCESS

    def bodies(self) -> list[bytes]:
        with self.lock:
            return [body for body, _ in self.deliveries]


def wait_for(check: object, what: str, timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_push_consumer_consumes_and_retries_a_failure(serve: GrpcServe) -> None:
    topic, group = unique("Push5"), unique("Push5G")
    serve.create_topic(topic)
    listener = Listener()
    consumer = PushConsumer5(
        ClientConfiguration(serve.grpc_address, Credentials()), group, listener, {topic: FilterExpression()}
    )
    consumer.startup()
    try:
        with producer(serve, topic) as client:
            # A new group starts at the queues' ends: send until the consumer is seen polling.
            warm = 0
            while b"warm" not in listener.bodies():
                assert warm < 200, "the push consumer never received"
                client.send(message(topic, b"warm"))
                warm += 1
                time.sleep(0.2)
            client.send(message(topic, b"ok-1"))
            client.send(message(topic, b"fail-1"))
            wait_for(lambda: b"ok-1" in listener.bodies() and listener.bodies().count(b"fail-1") == 2, "both")
        time.sleep(1.5)  # acked messages are not delivered again
    finally:
        consumer.shutdown()
    attempts = {body: [a for b, a in listener.deliveries if b == body] for body in (b"ok-1", b"fail-1")}
    assert attempts == {b"ok-1": [1], b"fail-1": [1, 2]}
