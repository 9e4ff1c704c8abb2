"""The send path's properties fast path matches the property-map path: WAIT removed, CLUSTER set."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.broker.processors.send_request import plain_properties as _plain_properties
from orbitmq.broker.processors.send_request import plain_properties_general as _plain_properties_general
from orbitmq.message.property_string import decode_properties, encode_properties


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"WAIT": "true"},
        {"WAIT": "false", "TAGS": "a", "KEYS": "k1 k2"},
        {"TAGS": "a", "UNIQ_KEY": "ABC", "CLUSTER": "spoofed"},
        {"user": "v", "WAIT": "true", "x": "WAIT\u0001false"},
    ],
)
def test_fast_path_equals_map_path(props: dict[str, str]) -> None:
    text = encode_properties(props)
    stored, wait = _plain_properties(text, "ClusterA")
    expected = dict(props)
    expected_wait = expected.pop("WAIT", "true") != "false"
    expected["CLUSTER"] = "ClusterA"
    assert decode_properties(stored) == expected
    assert wait is expected_wait
    assert "\u0002\u0002" not in stored and not stored.startswith("\u0002")


SEGMENTS = st.sampled_from(
    [
        *("", "TAGS\x01a", "KEYS\x01k1 k2", "UNIQ_KEY\x01ABC", "WAIT\x01true", "WAIT\x01false"),
        *("CLUSTER\x01x", "user\x01WAIT\x01false", "xWAIT\x01", "\x01", "a\x01"),
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(SEGMENTS, max_size=6), st.booleans())
def test_the_wait_tail_shortcut_equals_the_general_path(segments: list[str], tail: bool) -> None:
    """Clients put WAIT=true last: the shortcut that cuts it off gives what the general path gives."""
    text = "\x02".join(segments) + ("\x02WAIT\x01true" if tail else "")
    assert _plain_properties(text, "ClusterA") == _plain_properties_general(text, "ClusterA")


def test_the_usual_text_takes_the_shortcut() -> None:
    text = "UNIQ_KEY\x01ABC\x02TAGS\x01a\x02WAIT\x01true"
    assert _plain_properties(text, "C") == ("UNIQ_KEY\x01ABC\x02TAGS\x01a\x02CLUSTER\x01C", True)
