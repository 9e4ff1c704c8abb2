"""The send path's one-pass V2 header reader (`_fast_v2_header`) never disagrees with the Java-faithful
reader (`_send_header`): it returns the same header, or None (then the broker takes the careful path, with
its exact error remarks). The small fields are read by arithmetic or a lookup table, with a general
fallback."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.broker.processors.base import BadRequest
from orbitmq.broker.processors.send_request import V2_NAMES
from orbitmq.broker.processors.send_request import fast_v2_header as _fast_v2_header
from orbitmq.broker.processors.send_request import send_header as _send_header

COMMON = st.sampled_from(["0", "1", "3", "4", "4095", "4096", "70000", "1700000000000"])
ODD = st.sampled_from(
    [
        *("007", "-1", "+1", " 1", "1 ", "", "null", "x", "١٢", "2147483647", "2147483648", "-2147483648"),
        *("9223372036854775807", "9223372036854775808"),
        *("/", ":", "9", "٣", "x"),  # one character: the arithmetic's edges and a non-ASCII digit
    ]
)
# mostly well-formed values (so whole headers pass and the values are compared), some odd ones
NUMBERS = st.one_of(COMMON, COMMON, COMMON, ODD, st.integers(min_value=-(2**64), max_value=2**64).map(str))
TEXTS = st.one_of(st.sampled_from(["g", "T", "TBW102"]), st.sampled_from(["null", "", "UNIQ_KEY\x01A"]))
BOOLS = st.sampled_from(["true", "false", "0", "1", "True", "", "null"])


@st.composite
def headers(draw: st.DrawFn) -> dict[str, str]:
    ext: dict[str, str] = {}
    for key in "abc":
        if draw(st.integers(0, 9)) or key == "b":  # mostly present
            ext[key] = draw(TEXTS)
    for key in "defgh":
        if draw(st.integers(0, 9)):  # mostly present
            ext[key] = draw(NUMBERS)
    if draw(st.booleans()):
        ext["i"] = draw(TEXTS)
    if draw(st.booleans()):
        ext["j"] = draw(NUMBERS)
    if draw(st.integers(0, 5)) == 0:
        ext["l"] = draw(NUMBERS)
    if draw(st.booleans()):
        ext["m"] = draw(BOOLS)
    return ext


@settings(max_examples=400, deadline=None)
@given(headers())
def test_fast_header_equals_the_careful_reader_or_defers(ext: dict[str, str]) -> None:
    fast = _fast_v2_header(ext)
    try:
        careful = _send_header(ext, V2_NAMES)
    except BadRequest:
        assert fast is None
        return
    assert fast is None or fast == careful


def test_the_common_header_takes_the_fast_path() -> None:
    ext = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "1700000000000", "h": "0"}
    ext |= {"i": "UNIQ_KEY\x01A", "j": "0", "k": "false", "m": "false"}
    fast = _fast_v2_header(ext)
    assert fast is not None
    assert fast == _send_header(ext, V2_NAMES)
    assert fast[3:8] == (4, 3, 0, 1700000000000, 0)
    # the table's edges, and outside the table: the general reader of the fast path
    for value in ("4095", "4096"):
        assert _fast_v2_header(ext | {"d": value}) == _send_header(ext | {"d": value}, V2_NAMES)
    assert _fast_v2_header(ext | {"e": "70000"}) == _send_header(ext | {"e": "70000"}, V2_NAMES)
    assert _fast_v2_header(ext | {"e": "007"}) == _send_header(ext | {"e": "007"}, V2_NAMES)


def test_born_timestamps_at_the_long_edges() -> None:
    """Up to 18 digits skip the range check; 19 and more are checked against Java's long range. Digits that
    are not decimals (superscripts) go to the careful reader."""
    ext = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "0", "h": "0"}
    for born in ("999999999999999999", "9223372036854775807", "0009223372036854775807"):
        fast = _fast_v2_header(ext | {"g": born})
        assert fast is not None
        assert fast == _send_header(ext | {"g": born}, V2_NAMES)
    for born in ("9223372036854775808", "99999999999999999999", "\u00b2", "1\u00b2"):
        assert _fast_v2_header(ext | {"g": born}) is None
