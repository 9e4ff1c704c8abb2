"""The direct sender's one exchange on a blocking socket (client/direct_send.py), over a socket pair:
the answer is one frame read whole, and a frame the loop's decoder would refuse is refused here too,
before its bytes are read; the same whether the answer is polled for first (the default) or not."""

from __future__ import annotations

import socket
import struct

import pytest

from orbitmq.client.direct_send import DirectSender, _Line
from orbitmq.common.errors import RemoteProtocolError
from orbitmq.protocol.command import RemotingCommand, encode_command_bytes

MAX_FRAME = 4096


POLL_LIMITS = pytest.mark.parametrize("limit", [200e-6, 0.0], ids=["polled", "not polled"])


def _exchange(request: RemotingCommand, answer: bytes, limit: float) -> RemotingCommand:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(answer)  # (queued before the request is written: the exchange reads it after)
        return DirectSender._exchange(_Line(ours, "pair", limit), request, 5.0, MAX_FRAME)


@POLL_LIMITS
def test_the_answer_is_read_as_one_whole_frame(limit: float) -> None:
    request = RemotingCommand.request(310, {"a": "g"}, b"body")
    answer = RemotingCommand.response(0, body=b"x" * 1000).response_to(request)
    response = _exchange(request, encode_command_bytes(answer), limit)
    assert response.is_response and response.opaque == request.opaque and response.body == b"x" * 1000


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (struct.pack(">ii", MAX_FRAME, 0), "bad frame length"),  # over the limit with its length prefix
        (struct.pack(">ii", 2, 0), "bad frame length"),  # shorter than its own header-length word
        (struct.pack(">ii", 100, 200), "header length 200 exceeds frame length 100"),
    ],
    ids=["over the limit", "too short", "header past the frame"],
)
@POLL_LIMITS
def test_a_frame_the_loop_would_refuse_is_refused(head: bytes, why: str, limit: float) -> None:
    with pytest.raises(RemoteProtocolError, match=why):
        _exchange(RemotingCommand.request(310, {"a": "g"}, b"body"), head, limit)
