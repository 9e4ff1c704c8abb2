"""One check of the topic and group names a request's custom header carries, for every request code.

Broker and nameserver wrap each processor with `guard_names`, so no processor can see an illegal name in
its header whatever its code: names become directory names in the store (`consumequeue/<topic>/`), retry
and DLQ topics are built from group names, and DELETE_TOPIC removes a directory by name. Names carried in
bodies (heartbeat, lock batches, subscription group configs, broker registrations) are checked by the
processors that parse those bodies, with the same `topic_problem` / `group_problem`.

The answer is RocketMQ's for an illegal topic (TopicValidator.validateTopic): SYSTEM_ERROR with its
remark; a group gets the same code with the client Validators' remark. Valid names are remembered, so a
request costs a dict lookup per name field, not a regex, and carries on the remembered (interned) string.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

from orbitmq.message.validation import group_problem, topic_problem, valid_groups, valid_topics
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand

# Header keys that hold a topic / a group in any request (fact sheet section 3 headers).
TOPIC_KEYS: Final = ("topic", "originTopic")
GROUP_KEYS: Final = ("consumerGroup", "producerGroup", "group", "groupName", "srcGroup", "destGroup")
# SEND_MESSAGE_V2's short names: a = producerGroup, b = topic.
_V2_CODES: Final = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)
# The caches of names found valid (never rebound, only cleared), as Final statics: compiled, no lookup in
# the module dict per request.
_VALID_TOPICS: Final = valid_topics
_VALID_GROUPS: Final = valid_groups
# Every name key with the cache and the check of its kind, topics first (the first problem is answered).
_NAME_KEYS: Final[tuple[tuple[str, dict[str, str], Callable[[str], str | None]], ...]] = tuple(
    [(key, _VALID_TOPICS, topic_problem) for key in TOPIC_KEYS]
    + [(key, _VALID_GROUPS, group_problem) for key in GROUP_KEYS]
)


def request_name_problem(code: int, ext: dict[str, str] | None) -> str | None:
    """The remark for the first illegal topic or group name in the header, or None.

    Runs on every request: a remembered name costs one dict lookup, a send V2 header looks at its two
    short keys only. A valid name is replaced in `ext` by its interned string (see message/validation),
    so the processors' lookups by it match by identity. (A dict, not a Mapping: compiled, its reads are
    dict calls, not method lookups.)"""
    if not ext:
        return None
    if code in _V2_CODES and "b" in ext:
        problem = _check(ext, "b", ext["b"], _VALID_TOPICS, topic_problem)
        if problem is not None:
            return problem
        group = ext.get("a")
        return None if group is None else _check(ext, "a", group, _VALID_GROUPS, group_problem)
    for key, remembered, problem_of in _NAME_KEYS:
        value = ext.get(key)
        if value is not None and value != "null":
            problem = _check(ext, key, value, remembered, problem_of)
            if problem is not None:
                return problem
    return None


def _check(
    ext: dict[str, str],
    key: str,
    name: str,
    remembered: dict[str, str],
    problem_of: Callable[[str], str | None],
) -> str | None:
    """The remark for an illegal `name`, or None after `ext[key]` became its remembered interned string."""
    known = remembered.get(name)
    if known is None:
        problem = problem_of(name)  # (remembers a valid name)
        if problem is not None:
            return problem
        known = remembered.get(name, name)
    ext[key] = known
    return None


C = TypeVar("C")
# A processor answers at once (a RemotingCommand) or with what stands for a later answer (an awaitable,
# or transport/dispatch's Later): the guard passes that through unchanged.
R = TypeVar("R")


def guard_names(
    processor: Callable[[C, RemotingCommand], R],
) -> Callable[[C, RemotingCommand], R | RemotingCommand]:
    """`processor` behind the name check. No extra coroutine frame on the accepted path: the wrapper is a
    plain function returning what the processor returns (the dispatcher runs it inline); a refusal is
    answered at once."""

    def run(conn: C, request: RemotingCommand) -> R | RemotingCommand:
        problem = request_name_problem(request.code, request.ext_fields)
        if problem is not None:
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, problem)
        return processor(conn, request)

    # (no __name__/__doc__ copied: compiled by mypyc, `run` is a native callable without them)
    return run
