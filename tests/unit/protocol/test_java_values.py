"""Header fields are read as Apache RocketMQ reads them: Java's Boolean.parseBoolean and
Integer/Long.parseInt, for every typed header and for the processors' `Fields` alike."""

from __future__ import annotations

import dataclasses
import inspect
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.broker.processors.base import BadRequest, Fields
from orbitmq.protocol import headers as H
from orbitmq.protocol.header_spec import Header, HeaderError
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


def _header_classes() -> list[type[Header]]:
    return [c for _, c in inspect.getmembers(H, inspect.isclass) if issubclass(c, Header) and c is not Header]


def _minimal_ext(cls: type[Header]) -> dict[str, str]:
    """Every required field present with a harmless value of its kind."""
    ext = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.metadata["required"]:
            ext[f.metadata["key"]] = "false" if f.metadata["kind"] == "B" else "1"
    return ext


BOOL_FIELDS = [
    (cls, f)
    for cls in _header_classes()
    for f in dataclasses.fields(cls)  # type: ignore[arg-type]
    if f.metadata["kind"] == "B"
]
NUMBER_FIELDS = [
    (cls, f)
    for cls in _header_classes()
    for f in dataclasses.fields(cls)  # type: ignore[arg-type]
    if f.metadata["kind"] in ("I", "L")
]


def test_the_headers_have_boolean_and_number_fields() -> None:
    names = {f"{cls.__name__}.{f.name}" for cls, f in BOOL_FIELDS}
    assert {"SendMessageRequestHeader.batch", "EndTransactionRequestHeader.from_transaction_check"} <= names
    assert len(NUMBER_FIELDS) > 50


@pytest.mark.parametrize(
    ("cls", "field"), BOOL_FIELDS, ids=lambda v: getattr(v, "__name__", getattr(v, "name", ""))
)
def test_every_boolean_header_field_reads_as_java(
    cls: type[Header], field: dataclasses.Field[object]
) -> None:
    for text, expected in JAVA_BOOLEANS.items():
        ext = _minimal_ext(cls) | {field.metadata["key"]: text}
        assert getattr(cls.from_ext(ext), field.name) is expected, (text, expected)


@pytest.mark.parametrize(
    ("cls", "field"), NUMBER_FIELDS, ids=lambda v: getattr(v, "__name__", getattr(v, "name", ""))
)
def test_every_number_header_field_reads_as_java(cls: type[Header], field: dataclasses.Field[object]) -> None:
    key = field.metadata["key"]
    assert getattr(cls.from_ext(_minimal_ext(cls) | {key: "+12"}), field.name) == 12
    assert getattr(cls.from_ext(_minimal_ext(cls) | {key: "-3"}), field.name) == -3
    for bad in (" 12", "12 ", "1_2", "", "0x1"):
        with pytest.raises(HeaderError, match=key):
            cls.from_ext(_minimal_ext(cls) | {key: bad})


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
