"""RemotingCommand is a plain class with an explicit __init__ (compiled, it is cheaper than a dataclass's
generated one); it keeps what the dataclass gave: positional and keyword construction with the same
defaults, a fresh ext dict per command, equality by value, no hash."""

from __future__ import annotations

import pytest

from orbitmq.protocol.codes import CURRENT_VERSION, LanguageCode, SerializeType
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes


def test_defaults_and_positional_order() -> None:
    cmd = RemotingCommand(10)
    assert (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark) == (
        10,
        LanguageCode.PYTHON,
        CURRENT_VERSION,
        0,
        0,
        None,
    )
    assert cmd.ext_fields == {} and cmd.body == b"" and cmd.body_parts is None
    assert cmd.serialize_type == SerializeType.JSON
    full = RemotingCommand(1, 0, 2, 3, 4, "r", {"k": "v"}, b"b", None, SerializeType.ROCKETMQ)
    assert (full.language, full.version, full.opaque, full.flag, full.remark) == (0, 2, 3, 4, "r")
    assert (full.ext_fields, full.body, full.serialize_type) == ({"k": "v"}, b"b", SerializeType.ROCKETMQ)


def test_each_command_gets_its_own_ext_dict() -> None:
    a, b = RemotingCommand(1), RemotingCommand(1)
    a.ext_fields["x"] = "1"
    assert b.ext_fields == {}


def test_equality_by_value_and_unhashable() -> None:
    a = RemotingCommand(1, opaque=5, ext_fields={"k": "v"}, body=b"x")
    assert a == RemotingCommand(1, opaque=5, ext_fields={"k": "v"}, body=b"x")
    assert a != RemotingCommand(1, opaque=6, ext_fields={"k": "v"}, body=b"x")
    assert a != RemotingCommand(1, opaque=5, ext_fields={"k": "w"}, body=b"x")
    assert a != "not a command"
    with pytest.raises(TypeError):
        hash(a)


def test_round_trip_is_equal() -> None:
    for serialize_type in (SerializeType.JSON, SerializeType.ROCKETMQ):
        cmd = RemotingCommand(
            11, opaque=9, flag=1, remark="r", ext_fields={"a": "1"}, serialize_type=serialize_type
        )
        back = decode_command(encode_command_bytes(cmd)[4:])
        assert back == cmd
