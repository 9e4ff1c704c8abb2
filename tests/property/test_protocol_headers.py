"""Property: every header class round-trips through its ext fields (and V2 short names)."""

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.protocol import headers as h
from orbitmq.protocol.codes import SerializeType
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes

_VALUES = {
    "S": st.text(max_size=12),
    "I": st.integers(-(2**31), 2**31 - 1),
    "L": st.integers(-(2**63), 2**63 - 1),
    "B": st.booleans(),
}


def header_strategy(cls: type[h.Header]) -> st.SearchStrategy[Any]:
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        value = _VALUES[f.metadata["kind"]]
        if f.default is not dataclasses.MISSING:
            value = value | st.just(f.default)  # an omitted field decodes to its default
        kwargs[f.name] = value
    return st.builds(cls, **kwargs)


@pytest.mark.parametrize("cls", h.ALL_HEADERS, ids=lambda c: c.__name__)
@settings(max_examples=40)
@given(data=st.data())
def test_header_round_trip(cls: type[h.Header], data: st.DataObject) -> None:
    header = data.draw(header_strategy(cls))
    ext = header.to_ext()
    assert all(isinstance(v, str) for v in ext.values())
    assert cls.from_ext(ext) == header
    # and through a whole frame in either header serialization
    serialize_type = data.draw(st.sampled_from(list(SerializeType)))
    cmd = RemotingCommand(0, ext_fields=ext, serialize_type=serialize_type)
    assert cls.from_ext(decode_command(encode_command_bytes(cmd)[4:]).ext_fields) == header


@given(data=st.data())
def test_send_v2_round_trip(data: st.DataObject) -> None:
    header = data.draw(header_strategy(h.SendMessageRequestHeader))
    assert h.SendMessageRequestHeader.from_ext_v2(header.to_ext_v2()) == header
