"""What every broker processor shares: typed access to ext fields and error answers.

`Fields` reads the custom header (all values strings on the wire, as decode_command stores them) and
raises `BadRequest` naming the field, as RocketMQ's "the custom field <x> is null". `guarded` turns a
`BadRequest` raised anywhere in a processor into the response it carries, so validation code can stop
early with one `raise`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import wraps

from orbitmq.message.validation import group_problem, topic_problem
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.java_values import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, parse_boolean
from orbitmq.transport.connection import Connection

Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand | None]]


class BadRequest(Exception):
    """Stop processing and answer `code` with `remark`."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


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


class Fields:
    """Typed, validated access to a request's ext fields."""

    __slots__ = ("ext",)

    def __init__(self, ext: Mapping[str, str] | None) -> None:
        self.ext = ext or {}

    def _raw(self, name: str) -> str | None:
        value = self.ext.get(name)
        if value is None or value == "null":
            return None
        return value

    def req_str(self, name: str) -> str:
        value = self._raw(name)
        if value is None:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"the custom field {name} is null")
        return value

    def opt_str(self, name: str, default: str | None = None) -> str | None:
        value = self._raw(name)
        return default if value is None else value

    def _number(self, name: str, value: str, lo: int, hi: int) -> int:
        # the shape Java's Integer/Long.parseInt accepts (sign, decimal digits; no spaces or '_')
        digits = value[1:] if value[:1] in ("-", "+") else value
        if not digits.isdecimal():
            raise BadRequest(
                ResponseCode.SYSTEM_ERROR, f"the custom field {name} is not a number: {value[:64]!r}"
            )
        number = int(value)
        if not lo <= number <= hi:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"the custom field {name} is out of range: {number}")
        return number

    def req_int(self, name: str) -> int:
        return self._number(name, self.req_str(name), INT_MIN, INT_MAX)

    def req_long(self, name: str) -> int:
        return self._number(name, self.req_str(name), LONG_MIN, LONG_MAX)

    def opt_int(self, name: str, default: int) -> int:
        value = self._raw(name)
        return default if value is None else self._number(name, value, INT_MIN, INT_MAX)

    def opt_long(self, name: str, default: int) -> int:
        value = self._raw(name)
        return default if value is None else self._number(name, value, LONG_MIN, LONG_MAX)

    def opt_bool(self, name: str, default: bool = False) -> bool:
        """Java's Boolean.parseBoolean: "true" in any case is true; "0", "1", "" and the rest false."""
        value = self._raw(name)
        return default if value is None else parse_boolean(value)
