"""A batch's joined offset message ids (one struct pack + one hex) equal the per-message ids joined."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orbitmq.message.hosts import pack_host
from orbitmq.message.ids import offset_msg_id, offset_msg_ids

_hosts = st.sampled_from([pack_host("10.1.2.3", 10911), pack_host("::1", 30911), pack_host("0.0.0.0", 0)])


@given(_hosts, st.lists(st.integers(0, 0x7FFFFFFFFFFFFFFF), max_size=40))
def test_joined_ids_equal_each_id_joined(host: bytes, offsets: list[int]) -> None:
    assert offset_msg_ids(host, offsets) == ",".join(offset_msg_id(host, o) for o in offsets)
