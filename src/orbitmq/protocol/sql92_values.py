"""SQL92 selector values (protocol/sql92.py): Java's types, conversions and comparisons, and the two
errors. A selector must select the same messages as RocketMQ's, so values follow Java exactly.

Pure: no I/O.
"""

from __future__ import annotations

import math
import re

from orbitmq.protocol.java_values import (
    INT_MIN,
    LONG_MIN,
    JavaNumberFormatError,
    parse_boolean,
    parse_int,
    parse_long,
)


class JLong(int):
    """A Java Long (a plain `int` is a Java Integer): the two convert strings differently."""

    __slots__ = ()


# A Java value: None (null), bool (Boolean), int (Integer; a JLong is a Long), float (Double), str.
Value = None | bool | int | float | str


class SqlParseError(ValueError):
    """The selector is not valid RocketMQ SQL92; the message says where and why."""


class SqlEvalError(Exception):
    """Evaluating the selector failed for this message (RocketMQ: the message does not match)."""


# ---- Java value semantics -------------------------------------------------------------------------

# Java's Double.valueOf grammar (FloatingDecimal): decimal or hex significand, optional exponent, an
# optional f/F/d/D suffix, NaN/Infinity, after trimming characters <= U+0020. A regex checks the shape of
# one number here; the selector itself is parsed by hand (sql92_parser).
_JAVA_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?", re.ASCII)
_JAVA_HEX = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?", re.ASCII
)


def java_double(text: str) -> float:
    """Java's Double.valueOf(String); raises JavaNumberFormatError as Java throws."""
    s = text.strip("".join(chr(c) for c in range(0x21)))
    body = s[1:] if s[:1] in "+-" else s
    if body in ("NaN", "Infinity"):
        value = math.nan if body == "NaN" else math.inf
        return -value if s.startswith("-") else value
    if _JAVA_DECIMAL.fullmatch(s):
        return float(s.rstrip("fFdD"))
    if _JAVA_HEX.fullmatch(s):
        return float.fromhex(s.rstrip("fFdD"))
    raise JavaNumberFormatError(f"for input string: {text[:64]!r}")


def _java_class(v: object) -> str:
    t = type(v)
    if t is bool:
        return "Boolean"
    if t is int:
        return "Integer"
    if t is JLong:
        return "Long"
    if t is float:
        return "Double"
    return "String"


def _double_compare(a: float, b: float) -> int:
    """Java's Double.compare: NaN is greater than everything (and equal to itself), -0.0 < 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    # numerically equal: only the zeros' signs tell them apart
    return int(math.copysign(1.0, b) < 0) - int(math.copysign(1.0, a) < 0)


def _compare_same(lv: object, rv: object) -> int:
    if isinstance(lv, float):
        assert isinstance(rv, float)
        return _double_compare(lv, rv)
    if isinstance(lv, str):
        assert isinstance(rv, str)
        # Java compares UTF-16 code units; only equality matters to the callers, which is the same.
        return (lv > rv) - (lv < rv)
    assert isinstance(lv, int) and isinstance(rv, int)
    return (lv > rv) - (lv < rv)


def _convert(text: str, to: str) -> Value:
    try:
        if to == "Boolean":
            return parse_boolean(text)
        if to == "Integer":
            return parse_int(text)
        if to == "Long":
            return JLong(parse_long(text))
        return java_double(text)
    except JavaNumberFormatError as exc:
        raise SqlEvalError(f"cannot convert {text[:64]!r} to {to}: {exc}") from None


def java_compare(lv: Value, rv: Value) -> int:
    """RocketMQ's ComparisonExpression.__compare (with string conversion on): widen numbers, convert a
    string to the other side's type, answer -1 for incomparable types."""
    lc, rc = _java_class(lv), _java_class(rv)
    if lc != rc:
        if lc == "Boolean":
            if rc == "String":  # RocketMQ casts the Boolean to String here and fails
                raise SqlEvalError(f"cannot compare boolean {lv} with string {rv!r}")
            return -1
        if lc == "String":
            assert isinstance(lv, str)
            lv = _convert(lv, rc)
        elif rc == "String":
            assert isinstance(rv, str)
            if lc == "Boolean":  # pragma: no cover -- handled above
                return -1
            rv = _convert(rv, lc)
        elif rc == "Boolean":
            return -1
        elif lc == "Double" or rc == "Double":
            assert isinstance(lv, (int, float)) and isinstance(rv, (int, float))
            lv, rv = float(lv), float(rv)
        # Integer against Long: Python ints compare exactly, which is what widening gives.
    return _compare_same(lv, rv)


def java_equals(lv: Value, rv: Value) -> bool:
    """Object.equals of two Java values of these classes."""
    if _java_class(lv) != _java_class(rv):
        return False
    if isinstance(lv, float) and isinstance(rv, float):
        return _double_compare(lv, rv) == 0
    return lv == rv


def java_negate(v: Value) -> Value:
    if type(v) is int:
        return v if v == INT_MIN else -v  # Java int negation wraps at MIN_VALUE
    if type(v) is JLong:
        return JLong(v if v == LONG_MIN else -v)
    if type(v) is float:
        return -v
    return None  # RocketMQ: negating a non-number is null
