"""A pull's body is kept as a view into the response frame only when that frame cannot change."""

from __future__ import annotations

from orbitmq.protocol.command import RemotingCommand
from orbitmq.spark.broker_access import _body_view


def _response(body: bytes | bytearray | memoryview | None = None) -> RemotingCommand:
    resp = RemotingCommand.response(0, None, {})
    if body is not None:
        resp.body = body
    return resp


def test_a_view_into_an_immutable_frame_is_not_copied() -> None:
    frame = b"header" + b"records"
    view = memoryview(frame)[6:]
    got = _body_view(_response(view))
    assert got is view and bytes(got) == b"records"


def test_a_view_into_a_mutable_buffer_is_copied() -> None:
    buffer = bytearray(b"records")
    got = _body_view(_response(memoryview(buffer)))
    buffer[:] = b"XXXXXXX"  # the transport reusing its receive buffer
    assert got == b"records"


def test_body_parts_are_joined() -> None:
    resp = _response()
    resp.body_parts = [b"rec", memoryview(b"ords")]
    assert _body_view(resp) == b"records"
