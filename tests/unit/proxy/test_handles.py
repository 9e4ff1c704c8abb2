"""The endpoint's own identifiers: transaction ids, receipt handles, authorization headers, peers."""

from __future__ import annotations

import pytest

pytest.importorskip("grpc", reason="needs the grpc extra")

from orbitmq.message.hosts import pack_host
from orbitmq.message.ids import offset_msg_id
from orbitmq.proxy.auth import parse_authorization
from orbitmq.proxy.call_context import parse_peer
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pop import parse_handle, receipt_handle
from orbitmq.proxy.status import ProxyError
from orbitmq.proxy.transaction import parse_transaction_id, transaction_id


def test_a_transaction_id_carries_the_half_messages_offsets() -> None:
    msg_id = offset_msg_id(pack_host("127.0.0.1", 10911), 123456)
    assert parse_transaction_id(transaction_id(msg_id, 42)) == (msg_id, 123456, 42)
    for bad in ("", "nothex:1", f"{msg_id}", f"{msg_id}:x", "01ABCDEF:3"):
        with pytest.raises(ProxyError) as refused:
            parse_transaction_id(bad)
        assert refused.value.code == pb.INVALID_TRANSACTION_ID


def test_receipt_handles_round_trip_and_odd_ones_are_refused() -> None:
    assert parse_handle(receipt_handle(3, 77, "ab12")) == (3, 77, "ab12")
    for bad in ("", "1:2", "a:2:t", "1:b:t", "1:2:", "1:2:3:4"):
        with pytest.raises(ProxyError) as refused:
            parse_handle(bad)
        assert refused.value.code == pb.INVALID_RECEIPT_HANDLE


def test_authorization_header() -> None:
    header = "MQv2-HMAC-SHA1 Credential=ak1, SignedHeaders=x-mq-date-time, Signature=0a1b"
    assert parse_authorization(header) == ("ak1", "0a1b")
    for bad in ("Basic xyz", "MQv2-HMAC-SHA1 Credential=ak1", "MQv2-HMAC-SHA1 Signature=0a"):
        with pytest.raises(ProxyError) as refused:
            parse_authorization(bad)
        assert refused.value.code == pb.UNAUTHORIZED


def test_grpc_peers() -> None:
    assert parse_peer("ipv4:127.0.0.1:5000") == ("127.0.0.1", 5000)
    assert parse_peer("ipv6:[::1]:5001") == ("::1", 5001)
    assert parse_peer("unix:/tmp/sock") == ("0.0.0.0", 0)
