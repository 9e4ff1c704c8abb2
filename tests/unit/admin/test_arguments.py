"""Argument parsing of `orbitmq admin` (mqadmin's flags); nothing here opens a socket."""

from __future__ import annotations

import pytest

from orbitmq.admin import cli
from orbitmq.admin.registry import COMMANDS

MQADMIN_SUBCOMMANDS = {
    "updateTopic",
    "deleteTopic",
    "topicList",
    "topicRoute",
    "topicStatus",
    "clusterList",
    "brokerStatus",
    "updateSubGroup",
    "deleteSubGroup",
    "consumerProgress",
    "consumerConnection",
    "queryMsgById",
    "queryMsgByKey",
    "queryMsgByOffset",
    "resetOffsetByTime",
    "sendMessage",
    "consumeMessage",
    "getBrokerConfig",
    "updateBrokerConfig",
}


def test_every_mqadmin_subcommand_is_registered() -> None:
    assert set(COMMANDS) >= MQADMIN_SUBCOMMANDS


def test_update_topic_flags_and_defaults() -> None:
    args = cli.parse_args(["updateTopic", "-n", "a:1;b:2", "-c", "DefaultCluster", "-t", "T"])
    assert (args.command, args.namesrv, args.cluster, args.topic) == (
        "updateTopic",
        "a:1;b:2",
        "DefaultCluster",
        "T",
    )
    assert (args.read_queue_nums, args.write_queue_nums, args.perm, args.order) == (8, 8, 6, False)
    assert args.broker_addr is None and args.json is False
    args = cli.parse_args(
        ["updateTopic", "-b", "h:1", "-t", "T", "-r", "2", "-w", "3", "-p", "4", "-o", "true", "--json"]
    )
    assert (
        args.broker_addr,
        args.read_queue_nums,
        args.write_queue_nums,
        args.perm,
        args.order,
        args.json,
    ) == (
        "h:1",
        2,
        3,
        4,
        True,
        True,
    )


def test_long_option_names_as_mqadmin_spells_them() -> None:
    args = cli.parse_args(
        ["queryMsgByOffset", "--topic", "T", "--brokerName", "b", "--queueId", "1", "--offset", "9"]
    )
    assert (args.topic, args.broker_name, args.queue_id, args.offset) == ("T", "b", 1, 9)


def test_message_flags() -> None:
    args = cli.parse_args(["sendMessage", "-t", "T", "-p", "body", "-k", "k1 k2", "-c", "tagA"])
    assert (args.topic, args.body, args.keys, args.tags, args.broker_name, args.queue_id) == (
        "T",
        "body",
        "k1 k2",
        "tagA",
        None,
        None,
    )
    args = cli.parse_args(["queryMsgByKey", "-t", "T", "-k", "key", "-c", "5", "-b", "0", "-e", "now"])
    assert (args.key, args.max_num, args.begin, args.end) == ("key", 5, "0", "now")
    args = cli.parse_args(["consumeMessage", "-t", "T"])
    assert (args.count, args.group, args.offset) == (128, "TOOLS_CONSUMER", None)
    args = cli.parse_args(["queryMsgById", "-i", "A,B", "-t", "T"])
    assert (args.msg_id, args.topic) == ("A,B", "T")


def test_group_flags() -> None:
    args = cli.parse_args(["updateSubGroup", "-c", "C", "-g", "G", "-s", "false", "-r", "3", "-q", "2"])
    assert (args.group, args.consume_enable, args.retry_max_times, args.retry_queue_nums) == (
        "G",
        False,
        3,
        2,
    )
    assert args.consume_broadcast_enable is None  # unset flags keep the broker's defaults
    args = cli.parse_args(["resetOffsetByTime", "-g", "G", "-t", "T", "-s", "now"])
    assert (args.group, args.topic, args.timestamp, args.force) == ("G", "T", "now", True)
    args = cli.parse_args(["consumerProgress"])
    assert args.group is None and args.topic is None


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = cli.main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_missing_required_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(["topicStatus", "-n", "127.0.0.1:9876"], capsys)
    assert rc == 2 and out == ""
    assert "the following arguments are required: -t/--topic" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["updateTopic", "-t", "T", "-r", "zero"],
        ["updateTopic", "-t", "T", "-r", "0"],
        ["updateTopic", "-t", "T", "-o", "maybe"],
        ["queryMsgByOffset", "-t", "T", "-b", "b", "-i", "-1", "-o", "0"],
    ],
)
def test_bad_values_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(argv, capsys)
    assert rc == 2
    assert "error:" in err and "Traceback" not in err


def test_unknown_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(["noSuchThing"], capsys)
    assert rc == 2
    assert "unknown subcommand 'noSuchThing'" in err


def test_help_lists_the_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["--help"], capsys)
    assert rc == 0
    assert all(name in out for name in MQADMIN_SUBCOMMANDS)
    rc, out, _ = run(["updateTopic", "-h"], capsys)
    assert rc == 0 and "--readQueueNums" in out


def test_no_name_server_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    rc, out, err = run(["topicList"], capsys)
    assert rc == 1 and out == ""
    assert (
        err.strip()
        == "orbitmq admin topicList: error: no name server address: pass -n host:port (';' separates several)"
    )


def test_error_lines_name_the_response_code() -> None:
    from orbitmq.common.errors import BrokerError, ConnectError, RequestTimeoutError

    assert (
        cli.error_text(BrokerError(17, "topic[X] not exist\nmore", address="127.0.0.1:10911"))
        == "127.0.0.1:10911 answered TOPIC_NOT_EXIST (17): topic[X] not exist"
    )
    assert (
        cli.error_text(BrokerError(1, None, address="namesrv"))
        == "the name server answered SYSTEM_ERROR (1): no remark"
    )
    assert cli.error_text(BrokerError(999, "x")).startswith("the name server answered UNKNOWN (999)")
    assert cli.error_text(ConnectError("connect to h:1 failed")) == "unreachable: connect to h:1 failed"
    assert cli.error_text(RequestTimeoutError("no answer")) == "timed out: no answer"


def test_no_subcommand_is_a_usage_error_with_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run([], capsys)
    assert rc == 2 and out == ""
    assert all(name in err for name in MQADMIN_SUBCOMMANDS)
    assert err.rstrip().endswith("orbitmq admin: error: name a subcommand")


def test_a_wrong_flag_prints_that_subcommands_usage_only(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(["topicList", "--no-such-flag"], capsys)
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("usage: orbitmq admin topicList ")
    assert "usage: usage:" not in err
    assert "updateTopic" not in err  # not the list of every subcommand
    assert lines[-1] == "orbitmq admin topicList: error: unrecognized arguments: --no-such-flag"
    assert len(lines) <= 6


def test_the_subcommand_parser_reads_the_common_flags() -> None:
    args = cli.parse_args(["topicList", "-n", "127.0.0.1:1", "--json", "--timeout", "2"])
    assert (args.command, args.namesrv, args.json, args.timeout) == ("topicList", "127.0.0.1:1", True, 2.0)
