"""The send path reads TAGS/KEYS/UNIQ_KEY with string searches (`_property`) so the store need not decode
the properties again: it must give what `decode_properties(text).get(name)` gives, for any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orbitmq.message.property_string import decode_properties
from orbitmq.message.property_string import find_property as _property

NAMES = ["TAGS", "KEYS", "UNIQ_KEY", "XTAGS", "TAGSX", ""]
segment = st.one_of(
    st.sampled_from(NAMES),  # no separator: dropped by decode_properties
    st.builds(
        lambda n, v: f"{n}\x01{v}", st.sampled_from(NAMES), st.sampled_from(["", "v", "a b", "\x01x", "TAGS"])
    ),
)


@given(st.lists(segment, max_size=6), st.booleans())
def test_property_lookup_matches_the_decoded_map(segments: list[str], trailing: bool) -> None:
    text = "\x02".join(segments) + ("\x02" if trailing else "")
    decoded = decode_properties(text)
    for name in ("TAGS", "KEYS", "UNIQ_KEY"):
        assert _property(text, name) == decoded.get(name), (text, name)
