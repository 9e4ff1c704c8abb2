"""`orbitmq serve` settings: flags over the -c file over serve's own defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.serve import build_broker_config, parse_args


def test_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ORBITMQ_HOME", str(tmp_path / "home"))
    config = build_broker_config(parse_args([]))
    assert config.broker_name == "broker-a"
    assert config.listen_port == 10911
    assert config.store_path_root_dir == str(tmp_path / "home" / "store")
    assert config.broker_ip1 == "127.0.0.1"
    assert build_broker_config(parse_args(["--port", "0"])).listen_port == 0
    assert build_broker_config(parse_args(["--namesrv-port", "0", "--broker-port", "7"])).listen_port == 7


def test_file_then_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ORBITMQ_HOME", str(tmp_path / "home"))
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=custom\nlistenPort=0\nflushDiskType=SYNC_FLUSH\nbrokerIP1=10.1.1.1\n")
    config = build_broker_config(parse_args(["-c", str(conf)]))
    assert (config.broker_name, config.listen_port, config.flush_disk_type) == ("custom", 0, "SYNC_FLUSH")
    assert config.broker_ip1 == "127.0.0.1"  # serve only ever listens on 127.0.0.1
    assert config.store_path_root_dir == str(tmp_path / "home" / "store")
    flags = ["-c", str(conf), "--store", str(tmp_path / "s"), "--flush-disk-type", "ASYNC_FLUSH"]
    config = build_broker_config(parse_args(flags))
    assert config.store_path_root_dir == str(tmp_path / "s") and config.flush_disk_type == "ASYNC_FLUSH"
