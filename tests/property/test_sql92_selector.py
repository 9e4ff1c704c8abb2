"""Properties of the SQL92 selector: numeric comparisons agree with arithmetic, AND/OR/NOT follow
Kleene's three-valued logic, printing a parsed tree parses back to the same tree, and no input text
makes the parser fail with anything but SqlParseError."""

from __future__ import annotations

import operator
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from orbitmq.protocol.sql92 import SqlParseError, compile_selector

OPS: dict[str, Callable[[int, int], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "=": operator.eq,
    "<>": operator.ne,
}
INT32 = st.integers(-(2**31) + 1, 2**31 - 1)


@given(x=INT32, y=st.integers(0, 2**31 - 1), op=st.sampled_from(sorted(OPS)))
def test_int_comparison_matches_arithmetic(x: int, y: int, op: str) -> None:
    assert compile_selector(f"a {op} {y}").evaluate({"a": str(x)}) is OPS[op](x, y)


@given(x=INT32, low=st.integers(0, 2**30), span=st.integers(0, 2**30))
def test_between_matches_arithmetic(x: int, low: int, span: int) -> None:
    """(Integer literals convert the property with Integer.valueOf, so x stays within 32 bits.)"""
    high = low + span
    assert compile_selector(f"a BETWEEN {low} AND {high}").evaluate({"a": str(x)}) is (low <= x <= high)
    assert compile_selector(f"a NOT BETWEEN {low} AND {high}").evaluate({"a": str(x)}) is not (
        low <= x <= high
    )


# A random boolean formula over atoms `pN = '1'`, rendered as text and evaluated by a reference.
Formula = tuple[object, ...]


def formulas() -> st.SearchStrategy[Formula]:
    atoms = st.integers(0, 3).map(lambda i: ("atom", i))
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.tuples(st.just("not"), inner),
            st.tuples(st.sampled_from(["and", "or"]), inner, inner),
        ),
        max_leaves=12,
    )


def render(f: Formula) -> str:
    if f[0] == "atom":
        return f"p{f[1]} = '1'"
    if f[0] == "not":
        return f"NOT ({render(f[1])})"  # type: ignore[arg-type]
    return f"({render(f[1])}) {str(f[0]).upper()} ({render(f[2])})"  # type: ignore[arg-type]


def kleene(f: Formula, truth: dict[int, bool | None]) -> bool | None:
    if f[0] == "atom":
        return truth[f[1]]  # type: ignore[index]
    if f[0] == "not":
        v = kleene(f[1], truth)  # type: ignore[arg-type]
        return None if v is None else not v
    a, b = kleene(f[1], truth), kleene(f[2], truth)  # type: ignore[arg-type]
    if f[0] == "and":
        return False if a is False or b is False else (None if a is None or b is None else True)
    return True if a is True or b is True else (None if a is None or b is None else False)


@given(f=formulas(), values=st.lists(st.sampled_from([True, False, None]), min_size=4, max_size=4))
def test_logic_is_three_valued(f: Formula, values: list[bool | None]) -> None:
    truth = dict(enumerate(values))
    props = {f"p{i}": ("1" if v else "0") for i, v in truth.items() if v is not None}
    selector = compile_selector(render(f))
    assert selector.evaluate(props) is kleene(f, truth)
    assert selector.matches(props) is (kleene(f, truth) is True)


@given(f=formulas())
def test_printed_tree_parses_back_to_itself(f: Formula) -> None:
    printed = str(compile_selector(render(f)).root)
    assert str(compile_selector(printed).root) == printed


ALPHABET = st.sampled_from(
    [*list("abAB_$019.'()=<>!+-*/, \n"), "AND ", "OR ", "NOT ", "IN ", "IS ", "NULL ", "BETWEEN ", "TRUE "]
)


@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_any_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        selector = compile_selector(text)
    except SqlParseError as exc:
        assert str(exc).startswith("Invalid MessageSelector.")
        return
    selector.matches({"a": "1", "b": "x", "A": "true"})  # never raises
