"""The proxy's queue choice: Guava's consistent hash for message groups, round robin otherwise, and the
delay level a delivery timestamp maps to."""

from __future__ import annotations

import pytest

pytest.importorskip("grpc", reason="needs the grpc extra")

from hypothesis import given
from hypothesis import strategies as st

from orbitmq.proxy.queue_select import QueueSelector, consistent_hash
from orbitmq.proxy.send import delay_level


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1), st.integers(min_value=1, max_value=200))
def test_consistent_hash_moves_a_key_only_to_the_new_bucket(key: int, buckets: int) -> None:
    before = consistent_hash(key, buckets)
    after = consistent_hash(key, buckets + 1)
    assert 0 <= before < buckets
    assert after in (before, buckets)


def test_consistent_hash_spreads_keys_and_refuses_no_buckets() -> None:
    counts = [0] * 8
    for key in range(8000):
        counts[consistent_hash(key * 2654435761, 8)] += 1
    assert min(counts) > 800  # roughly 1000 each
    assert consistent_hash(12345, 1) == 0
    with pytest.raises(ValueError, match="buckets"):
        consistent_hash(1, 0)


def test_selector_round_robin_and_groups() -> None:
    selector = QueueSelector()
    assert [selector.select("T", 4, "") for _ in range(6)] == [0, 1, 2, 3, 0, 1]
    assert len({selector.select("T", 4, "order-7") for _ in range(5)}) == 1
    with pytest.raises(ValueError, match="no write queue"):
        selector.select("T", 0, "")


def test_delay_level_waits_at_least_the_delay() -> None:
    levels = [1000, 5000, 10000, 30000]
    assert delay_level(levels, 1) == 1
    assert delay_level(levels, 1000) == 1
    assert delay_level(levels, 1001) == 2
    assert delay_level(levels, 10000) == 3
    assert delay_level(levels, 99999) == 4  # beyond the longest: the longest
