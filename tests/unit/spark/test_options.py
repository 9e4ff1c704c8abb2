"""Option parsing of the Spark source and sink: case-insensitive names, clear errors. No JVM."""

from __future__ import annotations

import pytest

from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.options import parse_sink_options, parse_source_options


def source(streaming: bool = False, **options: str) -> object:
    return parse_source_options({"namesrv": "127.0.0.1:9876", **options}, streaming=streaming)


def test_names_are_case_insensitive_with_aliases() -> None:
    opts = parse_source_options(
        {"NameSrvAddr": "127.0.0.1:9876;127.0.0.1:9877", "TOPIC": "t", "StartingOffsets": "latest",
         "maxOffsetsPerTrigger": "10", "subExpression": "A || B", "FailOnDataLoss": "False"},
        streaming=True,
    )  # fmt: skip
    assert opts.namesrv == ("127.0.0.1:9876", "127.0.0.1:9877")
    assert opts.topics == ("t",)
    assert opts.starting.kind == "latest"
    assert opts.max_offsets_per_trigger == 10
    assert opts.tags == "A || B"
    assert opts.fail_on_data_loss is False


def test_defaults_follow_kafka() -> None:
    assert source(topic="t").starting.kind == "earliest"  # batch reads everything
    assert source(True, topic="t").starting.kind == "latest"  # a stream starts at the end
    assert source(topic="t").ending.kind == "latest"
    assert source(topic="t").fail_on_data_loss is True


def test_specific_offsets_and_timestamps() -> None:
    opts = source(topic="t", startingOffsets='{"t": {"b": {"0": 5, "1": -2}}}', endingTimestamp="1000")
    assert opts.starting.offsets == {QueueRef("t", "b", 0): 5, QueueRef("t", "b", 1): -2}
    assert (opts.ending.kind, opts.ending.timestamp) == ("timestamp", 1000)
    assert source(topics="a, b,a").topics == ("a", "b")
    assert source(topicPattern="orders-.*").matches("orders-eu")
    assert not source(topicPattern="orders-.*").matches("xorders-eu")


@pytest.mark.parametrize(
    ("streaming", "options", "message"),
    [
        (False, {}, "exactly one of the options 'topic'"),
        (False, {"topic": "a", "topics": "b"}, "got topic, topics"),
        (False, {"topic": "a,b"}, "use 'topics'"),
        (False, {"topic": "bad topic"}, "not a valid topic name"),
        (False, {"topicPattern": "("}, "not a valid regular expression"),
        (False, {"topic": "t", "startingOffset": "earliest"}, "unknown option 'startingOffset'"),
        (False, {"topic": "t", "startingOffsets": "newest"}, "must be 'earliest', 'latest' or JSON"),
        (False, {"topic": "t", "startingOffsets": "latest"}, "cannot start at 'latest'"),
        (False, {"topic": "t", "endingOffsets": "earliest"}, "cannot be 'earliest'"),
        (False, {"topic": "t", "endingOffsets": '{"t": {"b": {"0": -2}}}'}, "cannot use -2"),
        (False, {"topic": "t", "maxOffsetsPerTrigger": "5"}, "for streams only"),
        (True, {"topic": "t", "endingOffsets": "latest"}, "batch reads only"),
        (False, {"topic": "t", "startingOffsets": "earliest", "startingTimestamp": "5"}, "only one of"),
        (True, {"topic": "t", "maxOffsetsPerTrigger": "0"}, "must be >= 1"),
        (True, {"topic": "t", "maxOffsetsPerTrigger": "ten"}, "must be an integer"),
        (False, {"topic": "t", "failOnDataLoss": "maybe"}, "must be true or false"),
        (False, {"topic": "t", "path": "/x"}, "takes no path"),
        (False, {"topic": "t", "sqlFilter": "a >"}, "option 'sqlFilter': Invalid MessageSelector"),
        (False, {"topic": "t", "sqlFilter": "a > 1", "tags": "A"}, "exclude each other"),
    ],
)
def test_errors_say_what_is_wrong(streaming: bool, options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_source_options({"namesrv": "127.0.0.1:9876", **options}, streaming=streaming)


def test_namesrv_is_required_and_checked() -> None:
    with pytest.raises(ValueError, match="'namesrv' \\(or 'nameSrvAddr'\\) is required"):
        parse_source_options({"topic": "t"}, streaming=False)
    with pytest.raises(ValueError, match="is not host:port"):
        parse_source_options({"namesrv": "localhost", "topic": "t"}, streaming=False)


def test_sink_options() -> None:
    opts = parse_sink_options({"nameSrvAddr": "127.0.0.1:9876", "Topic": "out", "sendTimeoutMs": "500"})
    assert (opts.topic, opts.send_timeout_ms, opts.producer_group) == ("out", 500, "orbitmq_spark_writer")
    with pytest.raises(ValueError, match="unknown option 'startingOffsets' for the orbitmq sink"):
        parse_sink_options({"namesrv": "127.0.0.1:9876", "startingOffsets": "x"})
