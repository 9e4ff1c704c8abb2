"""Argument parsing and pure helpers of `orbitmq bench` (no servers started)."""

from __future__ import annotations

import argparse

import pytest

from orbitmq.bench.cli import main
from orbitmq.bench.options import (
    QUICK_DEFAULTS,
    build_parser,
    parse_count_list,
    parse_int_list,
    parse_workloads,
)
from orbitmq.bench.orbitmq_server import parse_listening
from orbitmq.bench.peers import parse_peer_list
from orbitmq.bench.raw_driver import encode_batch_body, parse_route


def test_workload_lists() -> None:
    assert parse_workloads(["W1,w2", "W1"]) == ["W1", "W2"]
    assert parse_workloads(["all"])[:4] == ["W1", "W2", "W3", "W4"]
    assert parse_workloads(["all"]) == [f"W{i}" for i in range(1, 11)]  # every workload of BENCHMARKS.md
    with pytest.raises(argparse.ArgumentTypeError, match="W11"):
        parse_workloads(["W11"])


def test_quick_defaults_yield_to_explicit_flags() -> None:
    parser = build_parser()
    parser.set_defaults(**QUICK_DEFAULTS)
    args = parser.parse_args(["all", "--quick", "-d", "7"])
    assert (args.duration, args.messages, args.log_mb, args.spark_messages) == (7.0, 20_000, 64, 200_000)
    defaults = build_parser().parse_args(["W6"])
    assert (defaults.replication_senders, defaults.spark_messages) == (4, 200_000)


def test_int_and_peer_lists() -> None:
    assert parse_int_list("1,4") == [1, 4]
    with pytest.raises(argparse.ArgumentTypeError):
        parse_int_list("0")
    assert parse_peer_list("nats, redis,nats") == ["nats", "redis"]
    assert parse_peer_list("all") == ["nats", "redis"]
    assert parse_peer_list("none") == []


def test_w9_backlog_levels_allow_an_empty_store() -> None:
    assert parse_count_list("0,10000000") == [0, 10_000_000]
    with pytest.raises(argparse.ArgumentTypeError):
        parse_count_list("-1")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_count_list("")
    assert build_parser().parse_args(["W9"]).backlog == [0, 1_000_000]
    quick = build_parser()
    quick.set_defaults(**QUICK_DEFAULTS)
    assert quick.parse_args(["W9"]).backlog == [0, 100_000]
    # W1's route-query probe is on unless turned off.
    assert build_parser().parse_args(["W1"]).route_probe is True
    assert build_parser().parse_args(["W1", "--no-route-probe"]).route_probe is False


def test_parser_defaults_match_benchmarks_md() -> None:
    args = build_parser().parse_args(["W1"])
    assert (args.size, args.queues, args.in_flight, args.batch, args.rate) == (1024, 8, 256, 32, 2000.0)


def test_only_loopback_targets(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["W1", "-n", "10.0.0.1:9876"])
    assert "127.0.0.1" in capsys.readouterr().err


def test_listening_lines() -> None:
    assert parse_listening("namesrv listening on 127.0.0.1:4000\n") == ("namesrv", "127.0.0.1:4000")
    assert parse_listening("broker broker-a listening on 127.0.0.1:4001") == ("broker", "127.0.0.1:4001")
    assert parse_listening("broker broker-a ha listening on 127.0.0.1:4002") == ("ha", "127.0.0.1:4002")
    assert parse_listening("something else") is None


def test_route_parsing_takes_master_write_queues() -> None:
    body = (
        b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10912"},"brokerName":"b",'
        b'"cluster":"C"}],"filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6,'
        b'"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":4}]}'
    )
    queues = parse_route(body)
    assert [(q.broker_name, q.broker_addr, q.queue_id) for q in queues] == [
        ("b", "127.0.0.1:10911", i) for i in range(4)
    ]


def test_batch_body_layout() -> None:
    body = encode_batch_body([b"abc", b"xy"], ["K\x01V", ""])
    # first item: size 22 + 3 + 3, magic 0, crc 0, flag 0, body length 3
    assert body[:20] == (28).to_bytes(4, "big") + bytes(12) + (3).to_bytes(4, "big")
    assert body[20:23] == b"abc"
    assert body[23:25] == (3).to_bytes(2, "big")
    assert body[25:28] == b"K\x01V"
    assert body[28:32] == (24).to_bytes(4, "big")
    assert len(body) == 28 + 24
