"""The Prometheus endpoint of a real `orbitmq serve --metrics-port 0`: series move under sends and pulls,
and they agree with GET_CONSUME_STATS / GET_BROKER_RUNTIME_INFO (one source of counters)."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.testing.launch import start_broker, start_namesrv, start_serve
from orbitmq.testing.metrics import listening_url, scrape, value
from orbitmq.testing.process import ServerProcess

from .conftest import Raw, messages


@pytest.fixture(scope="module")
def serve_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("metrics")
    with start_serve(workdir, extra_args=("--metrics-port", "0", "--console-port", "0")) as proc:
        yield proc


async def test_series_move_and_agree_with_admin_requests(raw: Raw, serve_proc: ServerProcess) -> None:
    url = listening_url(serve_proc)
    assert url.startswith("http://127.0.0.1:")
    before = await asyncio.to_thread(scrape, url)
    assert value(before, "orbitmq_topic_put_messages_total", topic="MetT") == 0
    assert value(before, "orbitmq_namesrv_brokers") == 1
    assert value(before, "process_resident_memory_bytes") > 0

    await raw.create_topic("MetT", queues=2)
    for i in range(5):
        assert (await raw.send("MetT", b"m%d" % i, queue_id=0)).code == ResponseCode.SUCCESS
    pulled = await raw.pull("MetT", 0, 0, group="met-g")
    assert pulled.code == ResponseCode.SUCCESS
    committed = await raw.call(
        RequestCode.UPDATE_CONSUMER_OFFSET,
        {"consumerGroup": "met-g", "topic": "MetT", "queueId": "0", "commitOffset": "2"},
    )
    assert committed.code == ResponseCode.SUCCESS

    third = messages(await raw.pull("MetT", 0, 2, group="met-probe", max_nums=1))[0]  # oldest unconsumed
    scraped_from = int(time.time() * 1000)
    after = await asyncio.to_thread(scrape, url)
    scraped_to = int(time.time() * 1000)
    assert value(after, "orbitmq_topic_put_messages_total", topic="MetT") == 5
    assert value(after, "orbitmq_topic_put_bytes_total", topic="MetT") > 5 * 2
    assert value(after, "rocketmq_producer_tps", topic="MetT") > 0
    assert value(after, "rocketmq_producer_offset", topic="MetT") == 5
    assert value(after, "orbitmq_group_get_messages_total", topic="MetT", group="met-g") == 5
    assert value(after, "rocketmq_consumer_tps", topic="MetT", group="met-g") > 0
    assert value(after, "rocketmq_consumer_offset", topic="MetT", group="met-g") == 2
    assert value(after, "rocketmq_group_diff", topic="MetT", group="met-g") == 3
    assert value(after, "orbitmq_consumer_lag", topic="MetT", group="met-g", queueid="0") == 3
    assert value(after, "orbitmq_consumer_lag", topic="MetT", group="met-g", queueid="1") == 0
    age = value(after, "rocketmq_group_get_latency_by_storetime", topic="MetT", group="met-g")
    assert scraped_from - third.store_timestamp <= age <= scraped_to - third.store_timestamp
    sends = value(after, "orbitmq_requests_total", code="SEND_MESSAGE_V2", response="0")
    assert sends - value(before, "orbitmq_requests_total", code="SEND_MESSAGE_V2", response="0") == 5
    latency_count = value(after, "orbitmq_put_latency_seconds_count")
    assert latency_count >= 5
    assert value(after, "orbitmq_put_latency_seconds_bucket", le="+Inf") == latency_count
    assert value(after, "orbitmq_connections") >= 1
    assert value(after, "orbitmq_commitlog_bytes") > 0

    # The admin requests read the same counters.
    stats = await raw.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "met-g", "topic": "MetT"})
    consume_tps = orjson.loads(stats.body_bytes().split(b',"offsetTable"')[0] + b"}")["consumeTps"]
    assert consume_tps > 0
    info = orjson.loads((await raw.call(RequestCode.GET_BROKER_RUNTIME_INFO)).body_bytes())["table"]
    final = await asyncio.to_thread(scrape, url)
    assert float(info["msgPutTotalTodayNow"]) == value(final, "rocketmq_brokeruntime_msg_put_total_today_now")
    assert float(info["msgGetTotalTodayNow"]) == value(final, "rocketmq_brokeruntime_msg_gettotal_today_now")
    assert int(info["msgGetTotalTodayNow"]) >= 5


def test_serve_console_port_serves_the_console(serve_proc: ServerProcess) -> None:
    url = listening_url(serve_proc, "console")
    with urllib.request.urlopen(url + "api/cluster", timeout=5) as response:
        cluster = orjson.loads(response.read())
    assert [b["brokerName"] for b in cluster["brokers"]] == ["broker-a"]
    with urllib.request.urlopen(url, timeout=5) as response:
        assert b"orbitmq console" in response.read()


def test_standalone_namesrv_and_broker_take_metrics_port_from_their_conf(tmp_path: Path) -> None:
    with (
        start_namesrv(tmp_path, metricsPort=0) as namesrv,
        start_broker(tmp_path, namesrv.address, metricsPort=0) as broker,
    ):
        ns_url, broker_url = listening_url(namesrv), listening_url(broker)
        assert ns_url != broker_url
        deadline = time.monotonic() + 10
        while value(scrape(ns_url), "orbitmq_namesrv_brokers") != 1:  # registration is asynchronous
            assert time.monotonic() < deadline, "the broker never showed up in the namesrv's metrics"
            time.sleep(0.1)
        broker_samples = scrape(broker_url)
        assert value(broker_samples, "rocketmq_brokeruntime_msg_put_total_today_now", broker="broker-a") == 0
        assert "orbitmq_namesrv_brokers" not in {name for name, _ in broker_samples}
