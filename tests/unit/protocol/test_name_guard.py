"""The one name check every request passes (protocol/name_guard.py, message/validation.py)."""

from __future__ import annotations

import pytest

from orbitmq.message.validation import group_problem, topic_problem
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.name_guard import guard_names, request_name_problem


@pytest.mark.parametrize("name", ["T", "%RETRY%g", "a|b-c_d", "t" * 127])
def test_legal_topics(name: str) -> None:
    assert topic_problem(name) is None
    assert topic_problem(name) is None  # the remembered path


@pytest.mark.parametrize("name", ["", "  ", "T\n", "a.b", "../x", "t" * 128, "tópico", "٣"])
def test_illegal_topics(name: str) -> None:
    assert topic_problem(name) is not None


def test_groups_allow_255() -> None:
    assert group_problem("g" * 255) is None
    assert group_problem("g" * 256) is not None
    assert group_problem("G\n") is not None


def test_header_keys_and_v2_short_names() -> None:
    assert request_name_problem(RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "g"}) is None
    assert request_name_problem(RequestCode.PULL_MESSAGE, {"topic": "../T"}) is not None
    assert request_name_problem(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "a b"}) is not None
    assert request_name_problem(RequestCode.SEND_MESSAGE_V2, {"b": "T\n"}) is not None
    assert request_name_problem(RequestCode.SEND_MESSAGE_V2, {"a": "g" * 256, "b": "T"}) is not None
    # short names mean nothing for other codes; "null" is Java's absent value
    assert request_name_problem(RequestCode.PULL_MESSAGE, {"b": "x y"}) is None
    assert request_name_problem(RequestCode.PULL_MESSAGE, {"topic": "null"}) is None


async def test_guard_answers_before_the_processor_runs() -> None:
    ran: list[str] = []

    async def processor(conn: object, request: RemotingCommand) -> RemotingCommand | None:
        ran.append(request.ext_fields["topic"])
        return RemotingCommand.response(ResponseCode.SUCCESS)

    guarded = guard_names(processor)
    accepted = guarded(None, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "T"}))
    assert not isinstance(accepted, RemotingCommand)  # the processor's own coroutine
    ok = await accepted
    # a refusal is the answer itself: no coroutine (the dispatcher sends it at once)
    bad = guarded(None, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "T\n"}))
    assert isinstance(bad, RemotingCommand)
    assert ok is not None and ok.code == ResponseCode.SUCCESS
    assert bad is not None and bad.code == ResponseCode.SYSTEM_ERROR
    assert ran == ["T"]
