"""Offset planning of the Spark source: pure functions, no JVM, no broker."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.spark.offsets import QueueRef, from_offset_json, offset_json_text, to_offset_json
from orbitmq.spark.options import OffsetSpec
from orbitmq.spark.planning import (
    DataLossError,
    QueueRange,
    cap_to_target,
    check_data_loss,
    plan_ranges,
    rate_limit,
    resolve_position,
    split_ranges,
)

A0 = QueueRef("t", "broker-a", 0)
A1 = QueueRef("t", "broker-a", 1)
A10 = QueueRef("t", "broker-a", 10)
B0 = QueueRef("t", "broker-b", 0)
U0 = QueueRef("u", "broker-a", 0)


def test_offset_json_is_sorted_and_deterministic() -> None:
    offsets = {U0: 5, A10: 3, B0: 7, A1: 2, A0: 1}
    nested = to_offset_json(offsets)
    # numeric queue order (10 after 1), brokers and topics sorted, string keys only
    assert json.dumps(nested) == (
        '{"t": {"broker-a": {"0": 1, "1": 2, "10": 3}, "broker-b": {"0": 7}}, "u": {"broker-a": {"0": 5}}}'
    )
    shuffled = dict(reversed(list(offsets.items())))
    assert json.dumps(to_offset_json(shuffled)) == json.dumps(nested)
    assert offset_json_text(offsets) == json.dumps(nested, separators=(",", ":"))


def test_offset_json_round_trips_through_a_checkpoint() -> None:
    offsets = {A0: 1, A1: 2, B0: 0}
    text = json.dumps(to_offset_json(offsets))  # what Spark writes
    assert from_offset_json(json.loads(text)) == offsets
    assert from_offset_json(text) == offsets


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[1]", "must be a JSON object"),
        ('{"t": 1}', "topic 't' must map"),
        ('{"t": {"b": [1]}}', "broker 't'/'b' must map"),
        ('{"t": {"b": {"x": 1}}}', "queue id 'x'"),
        ('{"t": {"b": {"-1": 1}}}', "negative"),
        ('{"t": {"b": {"0": -1}}}', "must be >= 0"),
        ('{"t": {"b": {"0": true}}}', "must be >= 0"),
        ("{nope", "not valid JSON"),
    ],
)
def test_offset_json_errors_name_the_problem(data: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        from_offset_json(data)


def test_sentinels_only_where_allowed() -> None:
    assert from_offset_json('{"t": {"broker-a": {"0": -2, "1": -1}}}', allow_sentinels=True) == {
        A0: -2,
        A1: -1,
    }
    with pytest.raises(ValueError, match="-2 \\(earliest\\) or -1 \\(latest\\)"):
        from_offset_json('{"t": {"broker-a": {"0": -3}}}', allow_sentinels=True)


def test_resolve_position() -> None:
    assert resolve_position(OffsetSpec("earliest"), A0, 3, 9) == 3
    assert resolve_position(OffsetSpec("latest"), A0, 3, 9) == 9
    spec = OffsetSpec("specific", offsets={A0: 5, A1: -2, B0: -1}, fallback="latest")
    assert resolve_position(spec, A0, 3, 9) == 5
    assert resolve_position(spec, A1, 3, 9) == 3
    assert resolve_position(spec, B0, 3, 9) == 9
    assert resolve_position(spec, U0, 3, 9) == 9  # not mentioned: the fallback
    ts = OffsetSpec("timestamp", timestamp=1000)
    assert resolve_position(ts, A0, 3, 9, timestamp_offset=4) == 4
    assert resolve_position(ts, A0, 3, 9, timestamp_offset=100) == 9
    with pytest.raises(ValueError, match="no offset was looked up"):
        resolve_position(ts, A0, 3, 9)


def test_data_loss_fails_by_default_naming_queue_and_option() -> None:
    with pytest.raises(DataLossError, match=r"t/broker-a/0: offsets \[2, 5\) were removed.*failOnDataLoss"):
        check_data_loss({A0: 2, A1: 7}, {A0: 5, A1: 0}, {A0: 10, A1: 10}, fail=True)


def test_data_loss_skips_to_earliest_when_allowed() -> None:
    corrected, problems = check_data_loss(
        {A0: 2, A1: 7, B0: 50, U0: 1}, {A0: 5, A1: 0, B0: 0}, {A0: 10, A1: 10, B0: 20}, fail=False
    )
    assert corrected == {A0: 5, A1: 7, B0: 0, U0: 1}  # U0: broker unknown right now, left alone
    assert len(problems) == 2
    assert "recreated or truncated" in problems[1]


def test_no_data_loss_when_in_range() -> None:
    corrected, problems = check_data_loss({A0: 5, A1: 10}, {A0: 5, A1: 0}, {A0: 10, A1: 10}, fail=True)
    assert corrected == {A0: 5, A1: 10}
    assert problems == []


def test_rate_limit_admits_everything_under_the_limit() -> None:
    assert rate_limit({A0: 0, A1: 5}, {A0: 10, A1: 5}, 100) == {A0: 10, A1: 5}


def test_rate_limit_is_proportional_and_exact() -> None:
    ends = rate_limit({A0: 0, A1: 0, B0: 0}, {A0: 1000, A1: 100, B0: 10}, 111)
    taken = {q: ends[q] for q in ends}
    assert sum(taken.values()) == 111
    assert taken[A0] > taken[A1] > taken[B0] >= 1


def test_rate_limit_does_not_starve_a_tiny_queue() -> None:
    ends = rate_limit({A0: 0, A1: 0}, {A0: 1_000_000, A1: 1}, 100)
    assert ends[A1] == 1
    assert ends[A0] == 99


def test_rate_limit_below_queue_count_moves_every_queue_by_one() -> None:
    ends = rate_limit({A0: 0, A1: 0, B0: 0}, {A0: 50, A1: 50, B0: 50}, 2)
    assert ends == {A0: 1, A1: 1, B0: 1}


def test_rate_limit_new_queue_starts_at_zero_and_never_goes_back() -> None:
    ends = rate_limit({A0: 10}, {A0: 5, B0: 4}, 3)  # A0's max fell below start: stays put
    assert ends[A0] == 10
    assert ends[B0] == 3


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 500)), min_size=1, max_size=8),
    st.integers(1, 400),
)
def test_rate_limit_properties(queues: list[tuple[int, int]], limit: int) -> None:
    start = {QueueRef("t", "b", i): s for i, (s, _) in enumerate(queues)}
    latest = {QueueRef("t", "b", i): s + n for i, (s, n) in enumerate(queues)}
    ends = rate_limit(start, latest, limit)
    total_backlog = sum(n for _, n in queues)
    with_backlog = sum(1 for _, n in queues if n)
    admitted = sum(ends[q] - start[q] for q in start)
    for q, begin in start.items():
        assert begin <= ends[q] <= latest[q]
        if latest[q] > begin:
            assert ends[q] > begin  # nobody starves
    if total_backlog <= limit:
        assert admitted == total_backlog
    elif limit >= with_backlog:
        assert admitted == limit
    else:
        assert admitted == with_backlog


def test_cap_to_target() -> None:
    capped = cap_to_target({A0: 100, A1: 3, B0: 40}, {A0: 0, A1: 3, B0: 0}, {A0: 50, A1: 3})
    assert capped == {A0: 50, A1: 3, B0: 0}  # B0 appeared after the availableNow target was taken


def test_plan_ranges_skips_empty_and_sorts() -> None:
    ranges = plan_ranges({A1: 5, A0: 0}, {A1: 5, A0: 3, B0: 2})
    assert ranges == [QueueRange(A0, 0, 3), QueueRange(B0, 0, 2)]


def test_split_ranges_for_min_partitions() -> None:
    ranges = [QueueRange(A0, 0, 10), QueueRange(A1, 100, 101)]
    split = split_ranges(ranges, 4)
    assert [(r.queue, r.start, r.end) for r in split] == [
        (A0, 0, 3),
        (A0, 3, 6),
        (A0, 6, 8),
        (A0, 8, 10),
        (A1, 100, 101),
    ]
    assert split_ranges(ranges, None) == ranges
    assert split_ranges(ranges, 2) == ranges
    assert split_ranges([QueueRange(A0, 0, 2)], 10) == [QueueRange(A0, 0, 1), QueueRange(A0, 1, 2)]


@given(st.lists(st.integers(1, 300), min_size=1, max_size=6), st.integers(1, 20))
def test_split_ranges_cover_exactly(sizes: list[int], min_partitions: int) -> None:
    ranges = [QueueRange(QueueRef("t", "b", i), 7, 7 + n) for i, n in enumerate(sizes)]
    split = split_ranges(ranges, min_partitions)
    assert len(split) >= min(min_partitions, sum(sizes))
    for r in ranges:
        pieces = [p for p in split if p.queue == r.queue]
        assert pieces[0].start == r.start and pieces[-1].end == r.end
        assert all(a.end == b.start for a, b in itertools.pairwise(pieces))
        assert all(p.size > 0 for p in pieces)
