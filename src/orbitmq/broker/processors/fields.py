"""Fields: typed, validated reads of a request's ext fields, as RocketMQ's Java reads them.

Compiled with mypyc (native.py): every processor reads its header through here, a dozen fields per pull.
"""

from __future__ import annotations

from collections.abc import Mapping

from orbitmq.broker.processors.bad_request import BadRequest
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.java_values import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, parse_boolean


class Fields:
    """Typed, validated access to a request's ext fields."""

    __slots__ = ("ext",)

    def __init__(self, ext: Mapping[str, str] | None) -> None:
        # a dict (what decode_command stores) is read with native dict calls; another mapping is copied
        self.ext: dict[str, str] = ext if type(ext) is dict else dict(ext or {})

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
