"""Header fields are read as Apache RocketMQ reads them: Java's Boolean.parseBoolean and
Integer/Long.parseInt, in `java_values` and in the broker processors' `Fields`."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.broker.processors.base import BadRequest, Fields
from orbitmq.protocol.java_values import (
    INT_MAX,
    INT_MIN,
    JavaNumberFormatError,
    parse_boolean,
    parse_int,
    parse_long,
)

# What Java's Boolean.parseBoolean answers (only "true" ignoring case is true).
JAVA_BOOLEANS = {"0": False, "1": False, "True": True, "TRUE": True, "true": True, "": False,
                 "false": False, "yes": False, " true": False, "true ": False}  # fmt: skip


def java_parse_int(text: str, low: int, high: int) -> int | None:
    """A character-by-character model of Java's Integer.parseInt(text, 10); None where Java throws."""
    if not text:
        return None
    sign, i = 1, 0
    if text[0] in "+-":
        sign, i = (-1 if text[0] == "-" else 1), 1
        if len(text) == 1:
            return None
    value = 0
    for ch in text[i:]:
        digit = unicodedata.decimal(ch, -1)  # Character.digit(ch, 10) for Nd characters
        if digit < 0:
            return None
        value = value * 10 + digit
    value *= sign
    return value if low <= value <= high else None


@pytest.mark.parametrize(("text", "expected"), sorted(JAVA_BOOLEANS.items()))
def test_parse_boolean_is_javas(text: str, expected: bool) -> None:
    assert parse_boolean(text) is expected


def test_parse_boolean_of_none_is_false() -> None:
    assert parse_boolean(None) is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("+7", 7), ("-7", -7), ("007", 7), ("٣٣", 33), ("２", 2), (str(INT_MAX), INT_MAX)],
)
def test_parse_int_accepts_what_java_accepts(text: str, expected: int) -> None:
    assert parse_int(text) == expected


@pytest.mark.parametrize(
    "text", ["", "+", "-", " 7", "7 ", "1_000", "0x10", "1e3", "²", "7.0", "--7", str(INT_MAX + 1)]
)
def test_parse_int_refuses_what_java_refuses(text: str) -> None:
    with pytest.raises(JavaNumberFormatError):
        parse_int(text)


@given(st.text(alphabet=st.sampled_from("0123456789+- _٣²x\t"), max_size=24) | st.text(max_size=8))
def test_parse_int_and_long_match_the_java_model(text: str) -> None:
    for parse, low, high in ((parse_int, INT_MIN, INT_MAX), (parse_long, -(2**63), 2**63 - 1)):
        expected = java_parse_int(text, low, high)
        if expected is None:
            with pytest.raises(JavaNumberFormatError):
                parse(text)
        else:
            assert parse(text) == expected


def test_processor_fields_read_as_java() -> None:
    for text, expected in JAVA_BOOLEANS.items():
        assert Fields({"b": text}).opt_bool("b", not expected) is expected
    assert Fields({}).opt_bool("b", True) is True
    assert Fields({"n": "+5"}).req_int("n") == 5
    assert Fields({"n": "٣"}).opt_long("n", 0) == 3
    for bad in (" 5", "5 ", "1_0", "", "+"):
        with pytest.raises(BadRequest, match="not a number"):
            Fields({"n": bad}).req_int("n")
    with pytest.raises(BadRequest, match="out of range"):
        Fields({"n": str(INT_MAX + 1)}).req_int("n")
