"""aclEnable=true: 5.x clients sign with a plain_acl.yml account (MQv2-HMAC-SHA1 of x-mq-date-time), and
their sends and receives need the same permissions as a 4.x client's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from rocketmq.grpc_protocol import Code, MessagingServiceStub

from .conftest import GrpcServe, grpc_serve, metadata, unique
from .test_endpoint import route
from .test_send import message, producer

ADMIN = ("adminaccount", "adminsecret1")
WRITER = ("writer5x", "writersecret")
READER = ("reader5x", "readersecret")


@pytest.fixture
def acl_serve(tmp_path: Path) -> Iterator[GrpcServe]:
    accounts = {
        "accounts": [
            {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
            {"accessKey": WRITER[0], "secretKey": WRITER[1], "defaultTopicPerm": "PUB"},
            {
                "accessKey": READER[0],
                "secretKey": READER[1],
                "defaultTopicPerm": "SUB",
                "defaultGroupPerm": "SUB",
            },
        ]
    }
    (tmp_path / "acl.yml").write_text(yaml.safe_dump(accounts), encoding="utf-8")
    conf = {"aclEnable": True, "aclFile": "acl.yml", "accessKey": ADMIN[0], "secretKey": ADMIN[1]}
    with grpc_serve(tmp_path, **conf) as serve:
        serve.admin = ADMIN
        yield serve


def send_as(serve: GrpcServe, topic: str, account: tuple[str, str]) -> str:
    with producer(serve, topic, credentials=account) as client:
        return str(client.send(message(topic, b"signed")).message_id)


def test_a_signed_producer_with_pub_permission_sends(acl_serve: GrpcServe) -> None:
    topic = unique("Acl")
    acl_serve.create_topic(topic)
    assert send_as(acl_serve, topic, WRITER)


def test_a_producer_without_pub_permission_is_forbidden(acl_serve: GrpcServe) -> None:
    topic = unique("AclRead")
    acl_serve.create_topic(topic)
    with pytest.raises(Exception, match=f"No default permission for topic={topic}") as refused:
        send_as(acl_serve, topic, READER)
    assert getattr(refused.value, "code", None) == Code.FORBIDDEN


def test_unsigned_and_wrongly_signed_calls_are_unauthorized(acl_serve: GrpcServe) -> None:
    topic = unique("AclAuth")
    acl_serve.create_topic(topic)
    with grpc.insecure_channel(acl_serve.grpc_address) as channel:
        stub = MessagingServiceStub(channel)
        unsigned = route(stub, acl_serve, topic)
        assert unsigned.status.code == Code.UNAUTHORIZED
        assert "No accessKey is configured" in unsigned.status.message
        signature = f"MQv2-HMAC-SHA1 Credential={WRITER[0]}, SignedHeaders=x-mq-date-time, Signature=00ff"
        forged = [*metadata("c-acl"), ("x-mq-date-time", "20260101T000000Z"), ("authorization", signature)]
        from rocketmq.grpc_protocol import QueryRouteRequest

        request = QueryRouteRequest()
        request.topic.name = topic
        request.endpoints.addresses.add(host="127.0.0.1", port=acl_serve.grpc_port)
        answer = stub.QueryRoute(request, metadata=forged, timeout=5)
        assert answer.status.code == Code.UNAUTHORIZED
        assert "Check signature failed" in answer.status.message
    with pytest.raises(Exception, match="route"):
        send_as(acl_serve, topic, (WRITER[0], "not-the-secret"))
