"""The proxy's .proto files against the official client's: the same messages, fields (number, type,
label, optional-ness), enums and RPCs, so every byte on the wire means the same to both."""

from __future__ import annotations

import pytest

pytest.importorskip("grpc", reason="needs the grpc extra")
client_pb = pytest.importorskip("rocketmq.grpc_protocol", reason="needs rocketmq-python-client")

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FileDescriptor  # noqa: E402

from orbitmq.proxy.pb import definition_pb2, service_pb2  # noqa: E402


def _fields(message: Descriptor) -> dict[str, tuple[int, int, bool, bool, str]]:
    out = {}
    for field in message.fields:
        kind = (
            field.message_type.name
            if field.message_type
            else (field.enum_type.name if field.enum_type else "")
        )
        out[field.name] = (field.number, field.type, field.is_repeated, field.has_presence, kind)
    return out


def _known(mine: Descriptor, theirs: Descriptor) -> dict[str, tuple[int, int, bool, bool, str]]:
    """Our fields of the names the client knows (ours may be newer: rocketmq-apis grows)."""
    fields = _fields(mine)
    return {name: fields.get(name, (0, 0, False, False, "missing")) for name in _fields(theirs)}


def _enum(enum: EnumDescriptor) -> dict[str, int]:
    return {value.name: value.number for value in enum.values}


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (definition_pb2.DESCRIPTOR, client_pb.definition_pb2.DESCRIPTOR),
        (service_pb2.DESCRIPTOR, client_pb.service_pb2.DESCRIPTOR),
    ],
)
def test_every_message_and_enum_the_client_knows_matches(
    ours: FileDescriptor, theirs: FileDescriptor
) -> None:
    for name, message in theirs.message_types_by_name.items():
        assert name in ours.message_types_by_name, f"message {name} missing"
        mine = ours.message_types_by_name[name]
        assert _known(mine, message) == _fields(message), name
        for nested in message.nested_types:
            assert _known(mine.nested_types_by_name[nested.name], nested) == _fields(nested), nested.name
    for name, enum in theirs.enum_types_by_name.items():
        theirs_values = _enum(enum)
        mine_values = _enum(ours.enum_types_by_name[name])
        # the client may lag behind rocketmq-apis: every value it knows must be ours, with its number
        assert {k: mine_values.get(k) for k in theirs_values} == theirs_values, name


def test_the_service_has_the_clients_rpcs_with_their_shapes() -> None:
    ours = service_pb2.DESCRIPTOR.services_by_name["MessagingService"]
    theirs = client_pb.service_pb2.DESCRIPTOR.services_by_name["MessagingService"]
    assert theirs.full_name == "apache.rocketmq.v2.MessagingService"
    for method in theirs.methods:
        mine = ours.methods_by_name[method.name]
        assert (mine.input_type.name, mine.output_type.name) == (
            method.input_type.name,
            method.output_type.name,
        )
        assert (mine.client_streaming, mine.server_streaming) == (
            method.client_streaming,
            method.server_streaming,
        )


def test_bytes_written_by_one_parse_the_same_with_the_other() -> None:
    theirs = client_pb.Settings(client_type=client_pb.ClientType.PUSH_CONSUMER)
    theirs.subscription.group.name = "G"
    theirs.subscription.subscriptions.add().topic.name = "T"
    theirs.backoff_policy.customized_backoff.next.add().FromSeconds(5)
    theirs.user_agent.language = client_pb.Language.PYTHON
    mine = definition_pb2.Settings.FromString(theirs.SerializeToString())
    assert mine.subscription.subscriptions[0].topic.name == "T"
    assert mine.backoff_policy.customized_backoff.next[0].seconds == 5
    assert mine.user_agent.language == definition_pb2.PYTHON
    assert client_pb.Settings.FromString(mine.SerializeToString()) == theirs
