"""What every broker processor shares: typed access to ext fields and error answers.

`Fields` raises `BadRequest` naming the field (RocketMQ's "the custom field <x> is null"), and
`guarded` turns a `BadRequest` raised anywhere in a processor into its response, so validation code
can stop early with one `raise`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import wraps

from orbitmq.broker.processors.bad_request import BadRequest
from orbitmq.broker.processors.fields import Fields
from orbitmq.message.validation import group_problem, topic_problem
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection

__all__ = ["BadRequest", "Fields", "Handler", "check_group", "check_topic", "error", "guarded", "success"]

Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand | None]]


def error(code: int, remark: str) -> RemotingCommand:
    return RemotingCommand.response(code, remark)


def success(
    ext: Mapping[str, str] | None = None, body: bytes = b"", remark: str | None = None
) -> RemotingCommand:
    return RemotingCommand.response(ResponseCode.SUCCESS, remark, ext, body)


def guarded(handler: Handler) -> Handler:
    @wraps(handler)
    async def run(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        try:
            return await handler(conn, request)
        except BadRequest as bad:
            return error(bad.code, bad.remark)

    return run


def check_topic(name: str) -> str:
    """`name` if it is a legal topic name, else BadRequest(SYSTEM_ERROR) with RocketMQ's remark (for names
    in bodies: header names are checked for every code by protocol/name_guard.py)."""
    problem = topic_problem(name)
    if problem is not None:
        raise BadRequest(ResponseCode.SYSTEM_ERROR, problem)
    return name


def check_group(name: str) -> str:
    problem = group_problem(name)
    if problem is not None:
        raise BadRequest(ResponseCode.SYSTEM_ERROR, problem)
    return name
