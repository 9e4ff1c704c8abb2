"""Table formatting and time parsing of `orbitmq admin` (pure functions, no sockets)."""

from __future__ import annotations

import datetime

import orjson
import pytest

from orbitmq.admin.table import cell, format_pairs, format_table, format_timestamp, parse_time, to_json_text
from orbitmq.admin.views import ConsumerProgress, QueueProgress


def test_columns_are_aligned_to_the_widest_cell() -> None:
    text = format_table(["#Topic", "#QID"], [("TopicA", 0), ("T", 12)])
    assert text.splitlines() == [
        "#Topic  #QID",
        "TopicA  0",
        "T       12",
    ]


def test_a_cell_wider_than_its_header_widens_the_column_and_the_last_column_is_not_padded() -> None:
    lines = format_table(
        ["#A", "#B", "#C"], [("long value", "x", "last"), ("y", "wide cell", "z")]
    ).splitlines()
    assert lines[0] == "#A          #B         #C"
    assert lines[1] == "long value  x          last"
    assert lines[2] == "y           wide cell  z"
    assert all(line == line.rstrip() for line in lines)
    # every column starts at the same character position on every line
    assert {line.index(part) for line, part in zip(lines, ["#B", "x", "wide cell"], strict=True)} == {12}


def test_empty_table_still_prints_its_header() -> None:
    assert format_table(["#Topic", "#QID"], []) == "#Topic  #QID"


def test_row_with_the_wrong_number_of_cells_is_refused() -> None:
    with pytest.raises(ValueError, match="2 cells"):
        format_table(["#A"], [("x", "y")])


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), ("", "-"), (True, "true"), (False, "false"), (1.5, "1.50"), (7, "7"), ("a\nb", "a\\nb")],
)
def test_cells(value: object, text: str) -> None:
    assert cell(value) == text


def test_pairs_align_the_separator() -> None:
    assert format_pairs({"a": 1, "longer": "x"}).splitlines() == ["a     : 1", "longer: x"]
    assert format_pairs([("k", "v")], sep=" = ") == "k = v"
    assert format_pairs({}) == ""


def test_timestamps_are_local_with_milliseconds() -> None:
    ms = int(datetime.datetime(2024, 3, 5, 6, 7, 8, 9000).timestamp() * 1000)
    assert format_timestamp(ms) == "2024-03-05 06:07:08,009"
    assert format_timestamp(0) == "-"
    assert format_timestamp(-1) == "-"


def test_time_arguments() -> None:
    local = int(datetime.datetime(2024, 3, 5, 6, 7, 8, 123000).timestamp() * 1000)
    assert parse_time("2024-03-05#06:07:08:123", now_ms=0) == local
    assert parse_time("2024-03-05#06:07:08", now_ms=0) == local - 123
    assert parse_time("1700000000000", now_ms=0) == 1700000000000
    assert parse_time("now", now_ms=42) == 42
    with pytest.raises(ValueError, match=r"yyyy-MM-dd#HH:mm:ss:SSS"):
        parse_time("yesterday", now_ms=0)


def test_json_output_is_plain_json() -> None:
    progress = ConsumerProgress(
        "G", [QueueProgress("T", "broker-a", 0, 10, 4, 0), QueueProgress("T", "broker-a", 1, 5, 5, 0)]
    )
    data = orjson.loads(to_json_text(progress.to_json()))
    assert data["diffTotal"] == 6
    assert [q["diff"] for q in data["queues"]] == [6, 0]
    assert orjson.loads(to_json_text({1: "x"})) == {"1": "x"}


def _terminal_text(text: str) -> list[str]:
    import re

    return [re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip() for line in text.splitlines()]


def test_at_80_columns_addresses_and_times_are_never_cut() -> None:
    from orbitmq.admin.table import rich_table

    cluster = ["#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS", "#OutTPS", "#InTotal"]
    row = ["DefaultCluster", "broker-a", "0", "127.0.0.1:10911", "V4_9_7", "0.39", "0.00", "1234"]
    lines = _terminal_text(rich_table([*cluster, "#SPACE"], [[*row, "0.4213"]], 80))
    assert all(len(line) <= 80 for line in lines)
    assert "…" not in "".join(lines)
    assert any("127.0.0.1:10911" in line and "0.4213" in line for line in lines)

    progress = ["#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP"]
    time_cell = "2026-11-28 22:21:36,123"
    rows = [
        ["%RETRY%a_long_group_name", "broker-a", "0", "12345", "12000", "127.0.0.1:53412", "345", time_cell]
    ]
    lines = _terminal_text(rich_table([*progress, "#Diff", "#LastTime"], rows, 80))
    assert all(len(line) <= 80 for line in lines)
    assert "…" not in "".join(lines)
    assert any(time_cell in line and "127.0.0.1:53412" in line for line in lines)


def test_a_wide_terminal_keeps_the_box_and_every_header_on_one_line() -> None:
    from orbitmq.admin.table import rich_table, whole_columns

    lines = _terminal_text(rich_table(["#Broker Offset", "#Addr"], [["12", "127.0.0.1:10911"]], 200))
    assert "┃ Broker Offset ┃ Addr            ┃" in lines
    assert "│ 12            │ 127.0.0.1:10911 │" in lines
    assert whole_columns([["a", "1", "127.0.0.1:1", "-"], ["b", "2.5", "N/A", "-"]]) == {1, 2}
