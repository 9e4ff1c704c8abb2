"""The Apache RocketMQ peer's pure parts: finding an installation, the benchmark Producer's command line
and output, and the comparison's plan and ratios. No Java and no Apache RocketMQ are needed."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from orbitmq.bench.apache_rmq import (
    BROKER_MAIN,
    ENV_HOME,
    NAMESRV_MAIN,
    PRODUCER_MAIN,
    broker_properties,
    class_entry,
    configured_home,
    find_install,
    missing_classes,
    properties_text,
)
from orbitmq.bench.cpu import run_queue_wait_seconds, thread_wait_seconds
from orbitmq.bench.driver import DriverUnavailable
from orbitmq.bench.java_producer import (
    ProducerStats,
    parse_stats,
    prints_needed,
    producer_args,
    summarize,
)
from orbitmq.bench.result import Measurement
from orbitmq.bench.rmq_compare import (
    APACHE_JAVA,
    APACHE_ORBITMQ,
    ORBITMQ,
    ORBITMQ_JAVA,
    annotate,
    plan,
)

# Lines as the 4.9.x Producer prints them (printf "%7.3f" pads the average).
PERIODIC = (
    "Current Time: 2026-11-23 21:03:19,600 Send TPS: 2898 Max RT(ms): 415 Average RT(ms):   1.379 "
    "Send Failed: 0 Response Failed: 0"
)
COMPLETE = (
    "[Complete] Send Total: 50000 Send TPS: 4100 Max RT(ms): 12 Average RT(ms):  0.970 "
    "Send Failed: 3 Response Failed: 1"
)
HEADER = (
    "topic: T threadCount: 4 messageSize: 1024 keyEnable: false propertySize: 0 tagCount: 0 "
    "traceEnable: false aclEnable: false messageQuantity: 0"
)


def test_stats_lines_are_parsed() -> None:
    assert parse_stats(PERIODIC) == ProducerStats(2898, 415, 1.379, 0, 0)
    assert parse_stats(COMPLETE) == ProducerStats(4100, 12, 0.970, 3, 1)
    # A window without a single ack has no average: Java prints NaN.
    nan = parse_stats(PERIODIC.replace("  1.379", "    NaN"))
    assert nan is not None and nan.tps == 2898 and nan.avg_rt_ms != nan.avg_rt_ms
    assert parse_stats(HEADER) is None
    assert parse_stats("Send TPS: many") is None


def test_producer_command_line() -> None:
    args = producer_args("127.0.0.1:9876", "bench_W5_x", 32, 1024)
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    assert pairs == {
        "-n": "127.0.0.1:9876",
        "-t": "bench_W5_x",
        "-w": "32",
        "-s": "1024",
        "-k": "false",
    }
    assert "-y" not in args  # 4.9.0-4.9.3 have no -y and would refuse the command line
    with pytest.raises(ValueError):
        producer_args("127.0.0.1:9876", "t", 0, 1024)


def test_prints_cover_the_duration() -> None:
    assert [prints_needed(d) for d in (0.5, 5, 10, 10.5, 20, 21)] == [1, 1, 1, 2, 2, 3]


def test_summarize_means_and_last_failure_count() -> None:
    stats = [ProducerStats(1000, 5, 2.0, 1, 0), ProducerStats(3000, 9, 4.0, 2, 1)]
    assert summarize(stats) == (2000.0, 3.0, 9, 3)
    with pytest.raises(ValueError):
        summarize([])


def test_home_from_flag_then_environment(tmp_path: Path) -> None:
    assert configured_home(tmp_path, {ENV_HOME: "/elsewhere"}) == tmp_path
    assert configured_home(None, {ENV_HOME: "/elsewhere"}) == Path("/elsewhere")
    assert configured_home(None, {ENV_HOME: "  "}) is None
    assert configured_home(None, {}) is None


def _jar(path: Path, classes: list[str]) -> None:
    with zipfile.ZipFile(path, "w") as jar:
        for name in classes:
            jar.writestr(class_entry(name), b"\xca\xfe\xba\xbe")


def test_installation_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DriverUnavailable, match="not a directory"):
        find_install(tmp_path / "absent")
    home = tmp_path / "rmq"
    (home / "lib").mkdir(parents=True)
    with pytest.raises(DriverUnavailable, match="no lib"):
        find_install(home)
    _jar(home / "lib" / "rocketmq-namesrv.jar", [NAMESRV_MAIN])
    _jar(home / "lib" / "rocketmq-broker.jar", [BROKER_MAIN])
    (home / "lib" / "broken.jar").write_bytes(b"not a zip")
    with pytest.raises(DriverUnavailable, match=PRODUCER_MAIN.replace(".", r"\.")):
        find_install(home)
    # The Producer may come from a classes directory instead of a jar.
    producer = home / "classes" / class_entry(PRODUCER_MAIN)
    producer.parent.mkdir(parents=True)
    producer.write_bytes(b"\xca\xfe\xba\xbe")
    with pytest.raises(DriverUnavailable, match=r"conf/logback_namesrv\.xml"):
        find_install(home)
    (home / "conf").mkdir()
    for name in ("logback_namesrv.xml", "logback_broker.xml"):
        (home / "conf" / name).write_text("<configuration/>")
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    install = find_install(home)
    assert install.java == str(java)
    assert install.classpath[0] == str(home / "classes")
    assert missing_classes(install.classpath, [NAMESRV_MAIN, BROKER_MAIN, PRODUCER_MAIN]) == []
    command = install.java_command(PRODUCER_MAIN, ["-Xmx64m"], tmp_path, ["-w", "4"])
    assert command[0] == str(java) and command[-3:] == [PRODUCER_MAIN, "-w", "4"]
    assert f"-Duser.home={tmp_path}" in command
    env = install.java_env(tmp_path)
    assert env["ROCKETMQ_HOME"] == str(home) and "--add-opens" in env["JDK_JAVA_OPTIONS"]


def test_broker_configuration() -> None:
    props = broker_properties("127.0.0.1:1234", 20911, Path("/s"), "SYNC_FLUSH")
    assert props["flushDiskType"] == "SYNC_FLUSH"
    assert props["listenPort"] == "20911" and props["brokerIP1"] == "127.0.0.1"
    assert props["storePathCommitLog"] == "/s/commitlog"
    assert "flushDiskType=SYNC_FLUSH\n" in properties_text(props)


def test_plan_of_each_workload() -> None:
    flush, cases = plan("W5", None)
    assert flush == "SYNC_FLUSH"
    assert [(label, n) for label, n, _ in cases] == [("4 senders", 4), ("32 senders", 32)]
    assert cases[0][2] == [ORBITMQ, ORBITMQ_JAVA, APACHE_JAVA, APACHE_ORBITMQ]
    flush, cases = plan("W1", [1, 4])
    assert flush == "ASYNC_FLUSH" and cases == [("4 senders java", 4, [ORBITMQ_JAVA, APACHE_JAVA])]
    with pytest.raises(ValueError):
        plan("W3", None)


def test_the_two_target_ratios() -> None:
    def row(system: str, messages: int) -> Measurement:
        return Measurement("W5", "4 senders", system, messages=messages, seconds=10.0)

    rows = {
        ORBITMQ: row(ORBITMQ, 9000),
        ORBITMQ_JAVA: row(ORBITMQ_JAVA, 5000),
        APACHE_JAVA: row(APACHE_JAVA, 10000),
    }
    lines = annotate(rows)
    assert rows[ORBITMQ_JAVA].extra["broker_x_apache_java_client"] == pytest.approx(0.5)
    assert rows[ORBITMQ].extra["orbitmq_client_x_apache_java"] == pytest.approx(0.9)
    assert len(lines) == 2
    rows[APACHE_JAVA].skipped = True
    assert annotate({k: v for k, v in rows.items() if k != ORBITMQ}) == []


def test_thread_summed_wait_includes_the_main_thread() -> None:
    pid = os.getpid()
    main = run_queue_wait_seconds(pid)
    summed = thread_wait_seconds(pid)
    if main is None or summed is None:
        pytest.skip("no /proc schedstat here")
    assert summed >= main
    assert thread_wait_seconds(2**22 + 1) is None
