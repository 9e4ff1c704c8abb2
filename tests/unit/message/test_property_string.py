"""Properties string (fact sheet 5.3): encoding and the exact decode rules."""

from __future__ import annotations

import pytest

from orbitmq.message.codec import decode_properties, encode_properties, join_properties


def test_encoding_separates_with_u0001_and_u0002_without_a_trailing_separator() -> None:
    assert encode_properties({}) == ""
    assert encode_properties({"TAGS": "TagA"}) == "TAGS\x01TagA"
    assert encode_properties({"TAGS": "TagA", "KEYS": "a b"}) == "TAGS\x01TagA\x02KEYS\x01a b"


def test_none_values_are_left_out() -> None:
    assert encode_properties({"A": "1", "B": None, "C": "3"}) == "A\x011\x02C\x013"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("A\x011", {"A": "1"}),
        ("A\x011\x02", {"A": "1"}),  # trailing separator (ali-ons writes one)
        ("\x02A\x011\x02\x02B\x012", {"A": "1", "B": "2"}),  # empty segments
        ("A\x01", {}),  # empty value
        ("\x011", {}),  # empty name
        ("AB", {}),  # no name/value separator
        ("A\x011\x012", {"A": "1\x012"}),  # the first U+0001 splits
        ("A\x011\x02A\x012", {"A": "2"}),  # later duplicate wins
        ("A\x01\x02B\x012", {"B": "2"}),  # malformed segment dropped, next one kept
        ("x\x01y", {"x": "y"}),  # length exactly 3
        ("k\x01v\x02junk\x02\x01\x02n\x01m", {"k": "v", "n": "m"}),
        ("ключ\x01значение😀", {"ключ": "значение😀"}),
    ],
)
def test_decoding_keeps_only_well_formed_segments(text: str, expected: dict[str, str]) -> None:
    assert decode_properties(text) == expected


def test_round_trip() -> None:
    props = {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "AB" * 16, "user": "värde"}
    assert decode_properties(encode_properties(props)) == props


def test_join_inserts_a_separator_only_when_needed() -> None:
    assert join_properties("", "CLUSTER\x01c") == "CLUSTER\x01c"
    assert join_properties("A\x011", "") == "A\x011"
    assert join_properties("A\x011", "CLUSTER\x01c") == "A\x011\x02CLUSTER\x01c"
    assert join_properties("A\x011\x02", "CLUSTER\x01c") == "A\x011\x02CLUSTER\x01c"
