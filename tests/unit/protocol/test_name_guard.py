"""The one name check every request passes (protocol/name_guard.py, message/validation.py)."""

from __future__ import annotations

import sys

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


def _fresh(text: str) -> str:
    # A string object of its own, as a decoded header holds (literals are interned by the compiler).
    return "".join(list(text))


@pytest.mark.parametrize("remembered", [False, True])
def test_valid_names_go_on_as_their_interned_string(remembered: bool) -> None:
    # The broker's tables are keyed by interned names: a request carrying the very same object finds its
    # entries by identity (no compare against a key that is cold in the cache).
    topic, group, other = _fresh("InternedTopic"), _fresh("interned_group"), _fresh("InternedOrigin")
    if remembered:
        assert topic_problem(_fresh(topic)) is None and group_problem(_fresh(group)) is None
    v2 = {"a": group, "b": topic}
    assert request_name_problem(RequestCode.SEND_MESSAGE_V2, v2) is None
    assert v2["b"] is sys.intern(topic) and v2["a"] is sys.intern(group)
    assert v2["b"] is not topic
    ext = {"topic": _fresh(topic), "originTopic": other, "consumerGroup": _fresh(group), "queueId": "1"}
    assert request_name_problem(RequestCode.PULL_MESSAGE, ext) is None
    assert ext["topic"] is sys.intern(topic) and ext["consumerGroup"] is sys.intern(group)
    assert ext["originTopic"] is sys.intern(other) and ext["queueId"] == "1"
