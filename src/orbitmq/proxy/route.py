"""QueryRoute and QueryAssignment: the topic's queues on this broker, reached at this gRPC endpoint.

As RocketMQ 5's proxy in local mode, the route names the endpoint the client called (its hosts, this
server's port) as every queue's broker address. A 4.x topic has no message.type attribute and takes
every kind of message, so its queues accept NORMAL, FIFO, DELAY and TRANSACTION (RocketMQ 5's MIXED).
"""

from __future__ import annotations

from typing import Final

from orbitmq.message.validation import group_problem, topic_problem
from orbitmq.protocol.perm import is_readable, is_writeable
from orbitmq.proxy.backend import LocalBroker, TopicView
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.status import Code, ProxyError, ok

MIXED_TYPES: Final = (pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION)
MASTER_ID: Final = 0


def check_topic(resource: pb.Resource) -> str:
    problem = topic_problem(resource.name)
    if problem is not None:
        raise ProxyError(Code.ILLEGAL_TOPIC, problem)
    return resource.name


def check_group(resource: pb.Resource) -> str:
    problem = group_problem(resource.name)
    if problem is not None:
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, problem)
    return resource.name


def find_topic(broker: LocalBroker, topic: str) -> TopicView:
    found = broker.topics.table.get(topic)
    if found is None:
        raise ProxyError(
            Code.TOPIC_NOT_FOUND, f"topic {topic} does not exist on broker {broker_name(broker)}"
        )
    return found


def broker_name(broker: LocalBroker) -> str:
    return broker.config.broker_name


def permission(perm: int) -> pb.Permission:
    readable, writable = is_readable(perm), is_writeable(perm)
    if readable and writable:
        return pb.READ_WRITE
    if readable:
        return pb.READ
    return pb.WRITE if writable else pb.NONE


class Router:
    """Answers the route queries for the broker this endpoint serves, on port `port`."""

    def __init__(self, broker: LocalBroker, port: int) -> None:
        self.broker = broker
        self.port = port

    def endpoints(self, asked: pb.Endpoints) -> pb.Endpoints:
        """The endpoints the client called, with this server's port (ILLEGAL_ACCESS_POINT if none)."""
        if not asked.addresses:
            raise ProxyError(Code.ILLEGAL_ACCESS_POINT, "the request names no endpoints")
        answer = pb.Endpoints(scheme=asked.scheme or pb.IPv4)
        for address in asked.addresses:
            answer.addresses.add(host=address.host, port=self.port)
        return answer

    def broker_message(self, asked: pb.Endpoints) -> pb.Broker:
        return pb.Broker(name=broker_name(self.broker), id=MASTER_ID, endpoints=self.endpoints(asked))

    def query_route(self, request: spb.QueryRouteRequest) -> spb.QueryRouteResponse:
        topic = check_topic(request.topic)
        broker = self.broker_message(request.endpoints)
        config = find_topic(self.broker, topic)
        response = spb.QueryRouteResponse(status=ok())
        # As RocketMQ lists them: read-only queues, write-only, read-write, then (no access) none.
        perm = config.perm
        reads, writes = config.read_queue_nums, config.write_queue_nums
        kinds: list[tuple[int, pb.Permission]]
        if is_readable(perm) and is_writeable(perm):
            both = min(reads, writes)
            kinds = [(reads - both, pb.READ), (writes - both, pb.WRITE), (both, pb.READ_WRITE)]
        elif is_writeable(perm):
            kinds = [(writes, pb.WRITE)]
        elif is_readable(perm):
            kinds = [(reads, pb.READ)]
        else:
            kinds = [(max(1, reads, writes), pb.NONE)]
        queue_id = 0
        for count, queue_perm in kinds:
            for _ in range(count):
                queue = response.message_queues.add(id=queue_id, permission=queue_perm)
                queue.topic.CopyFrom(request.topic)
                queue.broker.CopyFrom(broker)
                queue.accept_message_types.extend(MIXED_TYPES)
                queue_id += 1
        return response

    def query_assignment(
        self, request: spb.QueryAssignmentRequest, *, fifo: bool = False
    ) -> spb.QueryAssignmentResponse:
        """One assignment per readable broker (queue id -1: the broker picks the queue, POP), or every
        queue of it for a FIFO group."""
        topic = check_topic(request.topic)
        check_group(request.group)
        broker = self.broker_message(request.endpoints)
        config = find_topic(self.broker, topic)
        response = spb.QueryAssignmentResponse()
        if is_readable(config.perm) and config.read_queue_nums > 0:
            ids = range(config.read_queue_nums) if fifo else (-1,)
            for queue_id in ids:
                queue = response.assignments.add().message_queue
                queue.topic.CopyFrom(request.topic)
                queue.id = queue_id
                queue.permission = permission(config.perm)
                queue.broker.CopyFrom(broker)
        if not response.assignments:
            response.status.CopyFrom(ProxyError(Code.FORBIDDEN, "no readable queue").status())
        else:
            response.status.CopyFrom(ok())
        return response
