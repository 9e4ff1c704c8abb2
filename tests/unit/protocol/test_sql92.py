"""The SQL92 selector: tokens, grammar, parse-time checks and evaluation as RocketMQ 4.9's filter module
defines them (three-valued logic, string/number conversion with Java's parsers, errors failing a message)."""

from __future__ import annotations

import math

import pytest

from orbitmq.protocol.sql92 import (
    JLong,
    SqlEvalError,
    SqlParseError,
    Tokenizer,
    compile_selector,
    java_compare,
    java_double,
)

NULL = None


def ev(expression: str, **props: str) -> object:
    return compile_selector(expression).evaluate(props)


@pytest.mark.parametrize(
    ("expression", "props", "expected"),
    [
        # numbers against string properties: converted with the literal's type
        ("a > 5", {"a": "10"}, True),
        ("a > 5", {"a": "5"}, False),
        ("a >= 5", {"a": "5"}, True),
        ("a < 5.5", {"a": "5"}, True),
        ("a <= -1", {"a": "-1"}, True),
        ("a = 5", {"a": "+5"}, True),  # Integer.valueOf accepts a plus sign
        ("a > 3000000000", {"a": "3000000001"}, True),  # a Long literal converts with Long.valueOf
        ("a > 1.5", {"a": "NaN"}, True),  # Double.compare puts NaN above everything
        ("a = 1.0", {"a": "1"}, True),
        # absent properties: unknown, and unknown is not a match
        ("a > 5", {}, NULL),
        ("a = 'x'", {}, NULL),
        ("a IN ('x')", {}, NULL),
        ("a NOT IN ('x')", {}, NULL),
        ("NOT (a > 5)", {}, NULL),
        ("a IS NULL", {}, True),
        ("a IS NOT NULL", {}, False),
        ("a IS NULL", {"a": "1"}, False),
        # RocketMQ's equality is asymmetric about a null right side
        ("a = b", {"a": "1"}, False),
        ("a = b", {"b": "1"}, NULL),
        # three-valued AND / OR
        ("a > 5 AND b = 'x'", {"b": "y"}, False),
        ("a > 5 AND b = 'x'", {"b": "x"}, NULL),
        ("a > 5 OR b = 'x'", {"b": "x"}, True),
        ("a > 5 OR b = 'x'", {"b": "y"}, NULL),
        ("TRUE OR a > 5", {}, True),
        ("FALSE AND a > 5", {}, False),
        # strings
        ("a = 'it''s'", {"a": "it's"}, True),
        ("a <> 'x'", {"a": "y"}, True),
        ("TAGS IN ('t1', 't2')", {"TAGS": "t2"}, True),
        ("TAGS NOT IN ('t1', 't2')", {"TAGS": "t3"}, True),
        ("a = b", {"a": "x", "b": "x"}, True),
        ("a > b", {"a": "2", "b": "10"}, False),  # two strings are ordered as doubles
        # BETWEEN
        ("a BETWEEN 1 AND 3", {"a": "3"}, True),
        ("a NOT BETWEEN 1 AND 3", {"a": "4"}, True),
        ("a NOT BETWEEN 1 AND 3", {"a": "2"}, False),
        # booleans
        ("a = TRUE", {"a": "True"}, True),
        ("a = FALSE", {"a": "yes"}, True),  # Boolean.valueOf: anything but "true" is false
        ("a", {"a": "true"}, False),  # a bare property is a boolean only if it is a Boolean
        ("NOT a", {"a": "x"}, True),
        ("a", {}, NULL),
        ("TRUE", {}, True),
        ("1 = TRUE", {}, False),  # incomparable types: not equal
        # unary minus
        ("-a > -5", {"a": "3"}, NULL),  # negating a string is null
        ("- -5 = 5", {}, True),
        ("a = -2147483648", {"a": "-2147483648"}, True),
        # keywords ignore case, comments are skipped, the text after a complete expression is not read
        ("a between 1 and 2 or b is not null", {"b": "z"}, True),
        ("/* c */ a = 1 -- tail\n", {"a": "1"}, True),
        ("a = 1 ) garbage", {"a": "1"}, True),
        ("a_1$ = 1", {"a_1$": "1"}, True),
    ],
)
def test_evaluation(expression: str, props: dict[str, str], expected: object) -> None:
    assert compile_selector(expression).evaluate(props) is expected
    assert compile_selector(expression).matches(props) is (expected is True)


@pytest.mark.parametrize(
    ("expression", "props"),
    [
        ("a > 5", {"a": "x"}),  # Integer.valueOf fails
        ("a > 5", {"a": "5.5"}),
        ("a = 5", {"a": "3000000000"}),  # out of Integer range
        ("a > b", {"a": "x", "b": "1"}),
        ("TRUE = a", {"a": "true"}),  # RocketMQ casts the Boolean to a String here and throws
        ("b = 1 OR a > 5", {"a": "x", "b": "2"}),  # an error anywhere fails the message
    ],
)
def test_evaluation_errors_fail_the_message(expression: str, props: dict[str, str]) -> None:
    selector = compile_selector(expression)
    with pytest.raises(SqlEvalError):
        selector.evaluate(props)
    assert selector.matches(props) is False


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("", "empty"),
        ("a >", "end of the expression"),
        ("a = NULL", "NULL cannot be compared"),
        ("NULL = a", "NULL cannot be compared"),
        ("a > 'x'", "cannot be compared"),
        ("a > TRUE", "cannot be compared"),
        ("(a > 1) > 2", "cannot be compared"),
        ("a BETWEEN 5 AND 1", "must be less than or equal"),
        ("a BETWEEN NULL AND 1", "cannot be NULL"),
        ("a IN (1, 2)", "string literal"),
        ("'x' IN ('x')", "property on the left of IN"),
        ("5", "boolean value"),
        ("'x'", "boolean value"),
        ("NOT 5", "boolean value"),
        ("a AND 5", "boolean value"),
        ("TRUE = 1", "cannot be compared with"),
        ("a != 1", "unexpected character '!'"),
        ("a = 'open", "unterminated string"),
        ("a = 1 /* open", "unterminated comment"),
        ("a = 9223372036854775808", "out of the long range"),
        ("a = 0.0", "smallest positive double"),
        ("a = 1e400", "largest double"),
        ("a IS 5", "expected 'NULL'"),
        ("a.b = 1", "unexpected character '.'"),
    ],
)
def test_parse_errors(expression: str, reason: str) -> None:
    with pytest.raises(SqlParseError, match="Invalid MessageSelector") as err:
        compile_selector(expression)
    assert reason in str(err.value)


def test_nesting_is_bounded() -> None:
    assert compile_selector("(" * 50 + "a = 1" + ")" * 50, max_depth=60).matches({"a": "1"})
    with pytest.raises(SqlParseError, match="nests deeper"):
        compile_selector("(" * 5000 + "a = 1" + ")" * 5000)
    with pytest.raises(SqlParseError, match="nests deeper"):
        compile_selector(" AND ".join(["a = 1"] * 500))
    with pytest.raises(SqlParseError, match="nests deeper"):
        compile_selector("NOT " * 5000 + "a")
    chain = " OR ".join([f"a = '{i}'" for i in range(90)])
    assert compile_selector(chain).matches({"a": "89"})


def _kinds(text: str) -> list[tuple[str, str]]:
    tokens, out = Tokenizer(text), []
    while (tok := tokens.next()).kind != "eof":
        out.append((tok.kind, tok.text))
    return out


def test_number_tokens_follow_javacc_longest_match() -> None:
    assert _kinds("5 5L 5. .5 5e3 5.5E-1 0 05") == [
        ("int", "5"),
        ("int", "5L"),
        ("float", "5."),
        ("float", ".5"),
        ("float", "5e3"),
        ("float", "5.5E-1"),
        ("int", "0"),
        ("int", "0"),
        ("int", "5"),
    ]
    assert _kinds("1e") == [("int", "1"), ("id", "e")]
    assert _kinds("notx NOT and Between") == [
        ("id", "notx"),
        ("keyword", "NOT"),
        ("keyword", "AND"),
        ("keyword", "BETWEEN"),
    ]
    assert _kinds("<><=>=<>") == [("symbol", "<>"), ("symbol", "<="), ("symbol", ">="), ("symbol", "<>")]


def test_literal_types() -> None:
    assert type(compile_selector("a = 2147483647").root.right).__name__ == "Constant"  # type: ignore[attr-defined]
    assert isinstance(compile_selector("a = 2147483648").root.right.value, JLong)  # type: ignore[attr-defined]
    assert not isinstance(compile_selector("a = 5L").root.right.value, JLong)  # narrowed to Integer
    # an Integer literal converts its property with Integer.valueOf (fails past 32 bits)...
    with pytest.raises(SqlEvalError):
        ev("a = 1", a="2147483648")
    # ...a Long literal with Long.valueOf
    assert ev("a > 2147483648", a="2147483649") is True


def test_java_double_grammar() -> None:
    assert java_double(" 1.5f ") == 1.5
    assert java_double("-Infinity") == -math.inf
    assert math.isnan(java_double("NaN"))
    assert java_double("0x1.8p1") == 3.0
    assert java_double("1e3") == 1000.0
    assert java_double(".5D") == 0.5
    for bad in ("", "1_000", "inf", "nan", "1e", "0x1.8", "1.5ff", "١"):
        with pytest.raises(ValueError):
            java_double(bad)


def test_java_compare_widening_and_incomparable_types() -> None:
    assert java_compare(5, JLong(5)) == 0
    assert java_compare(JLong(6), 5.5) == 1
    assert java_compare("7", 7) == 0
    assert java_compare(True, 1) == -1
    assert java_compare(-0.0, 0.0) == -1
    assert java_compare(math.nan, math.nan) == 0
