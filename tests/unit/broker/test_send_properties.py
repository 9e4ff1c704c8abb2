"""The send path's properties fast path matches the property-map path: WAIT removed, CLUSTER set."""

from __future__ import annotations

import pytest

from orbitmq.broker.processors.send import _plain_properties
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
