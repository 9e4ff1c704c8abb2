"""Broker-wide stats and consume-queue cleaning (broker/processors/admin_stats.py) against a real
`orbitmq serve`, read back with orbitmq's AdminClient: GET_BROKER_CONSUME_STATS (317),
VIEW_BROKER_STATS_DATA (315) and CLEAN_EXPIRED_CONSUMEQUEUE (306); plus the orbitmq admin verbs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest

from orbitmq.admin.api import AdminClient
from orbitmq.admin.cli import main as admin_main
from orbitmq.common.errors import BrokerError
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.testing import start_serve
from orbitmq.testing.process import ServerProcess
from orbitmq.transport import RemotingClient

from .conftest import Raw, messages


async def _group(raw: Raw, name: str) -> None:
    body = orjson.dumps({"groupName": name})
    assert (await raw.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)).code == 0


async def test_view_broker_stats_data(raw: Raw, serve_proc: ServerProcess) -> None:
    await raw.create_topic("StatsT", queues=1)
    for i in range(3):
        assert (await raw.send("StatsT", b"x" * 10 + b"%d" % i)).code == ResponseCode.SUCCESS
    assert len(messages(await raw.pull("StatsT", 0, 0, group="stats-g"))) == 3
    async with AdminClient(serve_proc.address) as admin:
        put = await admin.view_broker_stats_data(raw.broker, "TOPIC_PUT_NUMS", "StatsT")
        for window in put.values():  # one fresh topic: every window holds the three sends
            assert (window.sum, window.avgpt) == (3, 1.0)  # 3 messages, one per request
            assert window.tps > 0
        size = await admin.view_broker_stats_data(raw.broker, "TOPIC_PUT_SIZE", "StatsT")
        assert size["statsDay"].sum >= 3 * 11  # stored record bytes, at least the bodies
        got = await admin.view_broker_stats_data(raw.broker, "GROUP_GET_NUMS", "StatsT@stats-g")
        assert (got["statsMinute"].sum, got["statsHour"].sum, got["statsDay"].sum) == (3, 3, 3)
        assert got["statsMinute"].avgpt == 3.0  # one pull returned the three
        total = await admin.view_broker_stats_data(raw.broker, "BROKER_PUT_NUMS", "DefaultCluster")
        assert total["statsMinute"].sum >= 3
        for name, key in (
            ("TOPIC_PUT_NUMS", "NeverSentT"),
            ("GROUP_GET_NUMS", "StatsT@other-g"),
            ("BROKER_PUT_NUMS", "OtherCluster"),
            ("NO_SUCH_STATS", "StatsT"),
        ):
            with pytest.raises(BrokerError) as err:
                await admin.view_broker_stats_data(raw.broker, name, key)
            assert err.value.code == ResponseCode.SYSTEM_ERROR
            assert err.value.remark == f"The stats <{name}> <{key}> not exist"


async def test_broker_consume_stats(raw: Raw, serve_proc: ServerProcess) -> None:
    await raw.create_topic("BcsT", queues=2)
    for i in range(5):
        assert (await raw.send("BcsT", b"b%d" % i, queue_id=i % 2)).code == ResponseCode.SUCCESS
    await _group(raw, "bcs-g")
    assert len(messages(await raw.pull("BcsT", 0, 0, group="bcs-g", max_nums=2))) == 2
    commit = {"consumerGroup": "bcs-g", "topic": "BcsT", "queueId": "0", "commitOffset": "2"}
    assert (await raw.call(RequestCode.UPDATE_CONSUMER_OFFSET, commit)).code == ResponseCode.SUCCESS
    async with AdminClient(serve_proc.address) as admin:
        stats = await admin.broker_consume_stats(raw.broker)
        assert stats.broker_addr == raw.broker
        [one] = stats.groups["bcs-g"]
        by_queue = {mq.queue_id: w for mq, w in one.offset_table.items() if mq.topic == "BcsT"}
        assert (by_queue[0].broker_offset, by_queue[0].consumer_offset) == (3, 2)
        assert (by_queue[1].broker_offset, by_queue[1].consumer_offset) == (2, 0)
        assert by_queue[0].last_timestamp > 0 and by_queue[1].last_timestamp == 0
        assert one.consume_tps > 0  # the pull above, from the broker's stats counters
        assert stats.total_diff >= 3  # this group's 1 + 2, plus other groups of the shared broker
        # the same numbers as GET_CONSUME_STATS (one builder behind both)
        progress = await admin.consumer_progress("bcs-g", "BcsT")
        assert progress.diff_total == 3
        ordered = await admin.broker_consume_stats(raw.broker, is_order=True)
        assert ordered.groups.get("bcs-g", []) == []  # BcsT is not an ordered topic


async def test_admin_verbs_print_the_stats(
    raw: Raw, serve_proc: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    await raw.create_topic("VerbT", queues=1)
    assert (await raw.send("VerbT", b"v")).code == ResponseCode.SUCCESS
    await _group(raw, "verb-g")
    assert len(messages(await raw.pull("VerbT", 0, 0, group="verb-g"))) == 1
    commit = {"consumerGroup": "verb-g", "topic": "VerbT", "queueId": "0", "commitOffset": "1"}
    assert (await raw.call(RequestCode.UPDATE_CONSUMER_OFFSET, commit)).code == ResponseCode.SUCCESS

    def run(*argv: str) -> object:
        assert admin_main([*argv, "-n", serve_proc.address, "--json"]) == 0
        return orjson.loads(capsys.readouterr().out)

    rows = await asyncio.to_thread(run, "brokerConsumeStats", "-b", raw.broker)
    assert {"Topic": "VerbT", "Group": "verb-g", "Diff": 0}.items() <= next(
        r for r in rows["queues"] if r["Group"] == "verb-g"
    ).items()
    stats = await asyncio.to_thread(run, "statsAll", "-t", "VerbT")
    [row] = [r for r in stats if r["Consumer Group"] == "verb-g"]
    assert (row["InMsg24Hour"], row["OutMsg24Hour"], row["Accumulation"]) == (1, 1, 0)
    cleaned = await asyncio.to_thread(run, "cleanExpiredCQ", "-b", raw.broker)
    assert cleaned == {raw.broker: True}


async def test_clean_expired_consume_queue(tmp_path: Path) -> None:
    """Old records gone from the commit log (forced retention with 64 KiB segments): the queue that only
    pointed at them is destroyed, the queue with live records stays."""
    off_hour = f"{(time.localtime().tm_hour + 12) % 24:02d}"  # no automatic deletion during the test
    with start_serve(
        tmp_path, mappedFileSizeCommitLog=65536, fileReservedTime=0, deleteWhen=off_hour
    ) as serve:
        client = RemotingClient()
        try:
            raw = Raw(client, serve.broker_addr)
            await raw.create_topic("OldT", queues=1)
            await raw.create_topic("NewT", queues=1)
            for i in range(30):  # ~30 KiB for OldT, then ~4 segments of NewT after it
                assert (await raw.send("OldT", b"o" * 1000 + b"%d" % i)).code == ResponseCode.SUCCESS
            for i in range(240):
                assert (await raw.send("NewT", b"n" * 1000 + b"%d" % i)).code == ResponseCode.SUCCESS
            assert (await raw.call(RequestCode.DELETE_EXPIRED_COMMITLOG)).code == ResponseCode.SUCCESS
            cq_root = tmp_path / "store" / "consumequeue"
            assert (cq_root / "OldT" / "0").is_dir()
            info = orjson.loads((await raw.call(RequestCode.GET_BROKER_RUNTIME_INFO)).body_bytes())["table"]
            assert int(info["commitLogMinOffset"]) >= 65536  # OldT's first segment is gone
            assert (await raw.call(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)).code == ResponseCode.SUCCESS
            assert not (cq_root / "OldT").exists()
            assert (cq_root / "NewT" / "0").is_dir()
            max_old = await raw.call(RequestCode.GET_MAX_OFFSET, {"topic": "OldT", "queueId": "0"})
            assert int(max_old.ext_fields["offset"]) == 0  # forgotten, as in RocketMQ
            tail = messages(await raw.pull("NewT", 0, 239))
            assert tail[0].body.startswith(b"n")
        finally:
            await client.close()
