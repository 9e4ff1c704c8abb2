"""The gRPC endpoint's routing and client RPCs against a real `orbitmq serve --grpc-port 0`: QueryRoute,
Telemetry (settings both ways), Heartbeat, QueryAssignment, NotifyClientTermination, as the official
5.x client's own generated stub sends them, and the client's Producer starting and stopping on them."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from pathlib import Path

import grpc
import pytest
from rocketmq import ClientConfiguration, Credentials, Message, Producer
from rocketmq.grpc_protocol import (
    AddressScheme,
    ClientType,
    Code,
    Endpoints,
    HeartbeatRequest,
    MessageType,
    MessagingServiceStub,
    NotifyClientTerminationRequest,
    Permission,
    QueryAssignmentRequest,
    QueryRouteRequest,
    Settings,
    TelemetryCommand,
)

from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.testing import ServerProcess, start_broker, start_namesrv

from .conftest import MAX_MESSAGE_SIZE, GrpcServe, grpc_address, metadata, unique


def endpoints(serve: GrpcServe) -> Endpoints:
    host, port = serve.grpc_address.rsplit(":", 1)
    access = Endpoints(scheme=AddressScheme.IPv4)
    access.addresses.add(host=host, port=int(port))
    return access


def route(stub: MessagingServiceStub, serve: GrpcServe, topic: str, client_id: str = "c1") -> object:
    request = QueryRouteRequest(endpoints=endpoints(serve))
    request.topic.name = topic
    return stub.QueryRoute(request, metadata=metadata(client_id), timeout=5)


def test_query_route_names_this_endpoint_for_every_queue(
    serve: GrpcServe, stub: MessagingServiceStub
) -> None:
    topic = unique("Route")
    serve.create_topic(topic, queues=4)
    response = route(stub, serve, topic)
    assert response.status.code == Code.OK
    assert [q.id for q in response.message_queues] == [0, 1, 2, 3]
    for q in response.message_queues:
        assert q.topic.name == topic
        assert q.permission == Permission.READ_WRITE
        assert q.broker.name == "broker-a" and q.broker.id == 0
        assert [(a.host, a.port) for a in q.broker.endpoints.addresses] == [("127.0.0.1", serve.grpc_port)]
        assert set(q.accept_message_types) == {
            MessageType.NORMAL,
            MessageType.FIFO,
            MessageType.DELAY,
            MessageType.TRANSACTION,
        }


def test_query_route_refusals(serve: GrpcServe, stub: MessagingServiceStub) -> None:
    unknown = route(stub, serve, unique("NoSuchTopic"))
    assert unknown.status.code == Code.TOPIC_NOT_FOUND, unknown
    illegal = route(stub, serve, "bad topic!")
    assert illegal.status.code == Code.ILLEGAL_TOPIC
    no_endpoints = QueryRouteRequest()
    no_endpoints.topic.name = "TBW102"
    answer = stub.QueryRoute(no_endpoints, metadata=metadata("c1"), timeout=5)
    assert answer.status.code == Code.ILLEGAL_ACCESS_POINT
    anonymous = stub.QueryRoute(QueryRouteRequest(endpoints=endpoints(serve)), metadata=metadata(), timeout=5)
    assert anonymous.status.code == Code.CLIENT_ID_REQUIRED


class Telemetry:
    """One Telemetry stream: commands written by the test, the server's answers read back."""

    def __init__(self, stub: MessagingServiceStub, client_id: str) -> None:
        self._out: queue.Queue[TelemetryCommand | None] = queue.Queue()
        self.answers: queue.Queue[TelemetryCommand] = queue.Queue()
        self._call = stub.Telemetry(iter(self._out.get, None), metadata=metadata(client_id), timeout=30)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for answer in self._call:
                self.answers.put(answer)
        except Exception:  # the stream ends when the test closes it
            pass

    def settings(self, settings: Settings) -> TelemetryCommand:
        self._out.put(TelemetryCommand(settings=settings))
        return self.answers.get(timeout=5)

    def close(self) -> None:
        self._out.put(None)
        self._call.cancel()


def test_telemetry_answers_producer_and_consumer_settings(
    serve: GrpcServe, stub: MessagingServiceStub
) -> None:
    producer = Telemetry(stub, "producer-1")
    try:
        mine = Settings(client_type=ClientType.PRODUCER)
        mine.publishing.topics.add(name="TBW102")
        mine.publishing.max_body_size = 128 * 1024 * 1024
        answer = producer.settings(mine)
    finally:
        producer.close()
    assert answer.status.code == Code.OK
    assert answer.settings.publishing.max_body_size == MAX_MESSAGE_SIZE  # the broker's maxMessageSize
    assert answer.settings.publishing.validate_message_type
    assert answer.settings.backoff_policy.max_attempts == 3
    assert answer.settings.backoff_policy.exponential_backoff.max.ToMilliseconds() == 1000
    assert not answer.settings.metric.on

    consumer = Telemetry(stub, "consumer-1")
    try:
        theirs = Settings(client_type=ClientType.SIMPLE_CONSUMER)
        theirs.subscription.group.name = unique("G")
        answer = consumer.settings(theirs)
    finally:
        consumer.close()
    assert answer.status.code == Code.OK
    assert answer.settings.subscription.receive_batch_size == 32
    assert answer.settings.subscription.long_polling_timeout.ToSeconds() == 20
    assert not answer.settings.subscription.fifo
    assert answer.settings.backoff_policy.max_attempts == 17  # retryMaxTimes 16 + 1
    assert [d.ToSeconds() for d in answer.settings.backoff_policy.customized_backoff.next] == list(
        range(1, 19)
    )


def test_telemetry_without_publishing_or_subscription_ends_the_stream(
    serve: GrpcServe, stub: MessagingServiceStub
) -> None:
    call = stub.Telemetry(
        iter([TelemetryCommand(settings=Settings(client_type=ClientType.PRODUCER))]),
        metadata=metadata("c2"),
        timeout=5,
    )
    with pytest.raises(Exception) as failure:
        list(call)
    assert "INVALID_ARGUMENT" in str(failure.value)


def test_heartbeat_and_termination_need_the_settings_first(
    serve: GrpcServe, stub: MessagingServiceStub
) -> None:
    group = unique("HG")
    beat = HeartbeatRequest(client_type=ClientType.SIMPLE_CONSUMER)
    beat.group.name = group
    early = stub.Heartbeat(beat, metadata=metadata("hb-1"), timeout=5)
    assert early.status.code == Code.UNRECOGNIZED_CLIENT_TYPE

    stream = Telemetry(stub, "hb-1")
    try:
        mine = Settings(client_type=ClientType.SIMPLE_CONSUMER)
        mine.subscription.group.name = group
        assert stream.settings(mine).status.code == Code.OK
        assert stub.Heartbeat(beat, metadata=metadata("hb-1"), timeout=5).status.code == Code.OK
        bad = HeartbeatRequest(client_type=ClientType.SIMPLE_CONSUMER)
        bad.group.name = "bad group!"
        assert (
            stub.Heartbeat(bad, metadata=metadata("hb-1"), timeout=5).status.code
            == Code.ILLEGAL_CONSUMER_GROUP
        )
        bye = NotifyClientTerminationRequest()
        bye.group.name = group
        assert stub.NotifyClientTermination(bye, metadata=metadata("hb-1"), timeout=5).status.code == Code.OK
        again = stub.NotifyClientTermination(bye, metadata=metadata("hb-1"), timeout=5)
        assert again.status.code == Code.UNRECOGNIZED_CLIENT_TYPE
    finally:
        stream.close()


def test_query_assignment_gives_the_broker_to_pop_from(serve: GrpcServe, stub: MessagingServiceStub) -> None:
    topic = unique("Assign")
    serve.create_topic(topic, queues=4)
    request = QueryAssignmentRequest(endpoints=endpoints(serve))
    request.topic.name = topic
    request.group.name = unique("AG")
    answer = stub.QueryAssignment(request, metadata=metadata("a-1"), timeout=5)
    assert answer.status.code == Code.OK
    [assignment] = answer.assignments
    assert assignment.message_queue.id == -1  # the broker picks the queue (POP)
    assert assignment.message_queue.broker.endpoints.addresses[0].port == serve.grpc_port
    request.topic.name = unique("Missing")
    assert (
        stub.QueryAssignment(request, metadata=metadata("a-1"), timeout=5).status.code == Code.TOPIC_NOT_FOUND
    )
    request.topic.name = topic
    request.group.name = "bad group!"
    answer = stub.QueryAssignment(request, metadata=metadata("a-1"), timeout=5)
    assert answer.status.code == Code.ILLEGAL_CONSUMER_GROUP


def test_unserved_rpcs_answer_not_implemented(serve: GrpcServe, stub: MessagingServiceStub) -> None:
    from rocketmq.grpc_protocol.service_pb2 import GetOffsetRequest, PullMessageRequest

    answer = stub.GetOffset(GetOffsetRequest(), metadata=metadata("n-1"), timeout=5)
    assert answer.status.code == Code.NOT_IMPLEMENTED
    [streamed] = list(stub.PullMessage(PullMessageRequest(), metadata=metadata("n-1"), timeout=5))
    assert streamed.status.code == Code.NOT_IMPLEMENTED


def test_the_official_producer_starts_sends_and_stops(serve: GrpcServe) -> None:
    topic = unique("Start")
    serve.create_topic(topic)
    producer = Producer(ClientConfiguration(serve.grpc_address, Credentials()), (topic,))
    producer.startup()
    try:
        message = Message()
        message.topic = topic
        message.body = b"hello"
        receipt = producer.send(message)
        assert receipt.message_id == message.message_id
        # The settings answer told the client the broker's body limit: it refuses a bigger body itself.
        deadline = time.monotonic() + 10
        refused = None
        while refused is None and time.monotonic() < deadline:
            big = Message()
            big.topic = topic
            big.body = b"x" * (MAX_MESSAGE_SIZE + 1)
            try:
                producer.send(big)
            except Exception as exc:
                refused = exc
            time.sleep(0.1)
        assert refused is not None and "exceeds the threshold" in str(refused), refused
    finally:
        producer.shutdown()


def test_orbitmq_broker_serves_grpc_with_grpc_server_port(tmp_path: Path) -> None:
    with (
        start_namesrv(tmp_path) as namesrv,
        start_broker(tmp_path, namesrv.address, grpcServerPort=0) as broker,
    ):
        address = grpc_address(broker)
        serve = GrpcServe(broker, address)
        topic = unique("BrokerGrpc")
        asyncio.run(_create_on(broker, namesrv.address, topic))
        with grpc.insecure_channel(address) as channel:
            answer = route(MessagingServiceStub(channel), serve, topic)
        assert answer.status.code == Code.OK
        assert len(answer.message_queues) == 4


async def _create_on(broker: ServerProcess, namesrv: str, topic: str) -> None:
    instance = ClientInstance(ClientConfig(namesrv_addrs=[namesrv]))
    try:
        await instance.api.create_topic(broker.broker_addr, topic)
    finally:
        await instance.shutdown()
