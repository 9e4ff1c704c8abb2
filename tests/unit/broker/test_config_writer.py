"""ConfigWriter: config files written on one thread, coalesced, in order, on disk when `durable()` is done."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest

from orbitmq.broker import config_writer as cw
from orbitmq.broker.config_files import read_json_file
from orbitmq.broker.config_writer import ConfigWriter


def test_writes_land_in_order_and_coalesce(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate, entered = threading.Event(), threading.Event()
    written: list[tuple[str, bytes]] = []
    real = cw.write_file

    def slow_write(path: Path, data: bytes) -> None:
        entered.set()
        gate.wait(10)  # hold the thread so later writes queue up behind the first
        written.append((path.name, data))
        real(path, data)

    monkeypatch.setattr(cw, "write_file", slow_write)
    writer = ConfigWriter()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    writer.write(a, orjson.dumps({"v": 1}))
    first = writer.durable()
    assert entered.wait(10)  # the thread holds the first write
    for v in range(2, 6):  # queued while the thread is held: a is written once more, with v=5
        writer.write(a, orjson.dumps({"v": v}))
    writer.write(b, orjson.dumps({"w": 1}))
    last = writer.durable()
    assert not first.done() and not writer.idle
    gate.set()
    first.result(10)
    last.result(10)
    assert read_json_file(a) == {"v": 5} and read_json_file(b) == {"w": 1}
    assert [name for name, _ in written] == ["a.json", "a.json", "b.json"]
    assert writer.idle and writer.durable().done()
    writer.close()
    writer.write(a, orjson.dumps({"v": 6}))  # after close: written in the caller at once
    assert read_json_file(a) == {"v": 6}


def test_a_failed_write_reaches_its_waiter(tmp_path: Path) -> None:
    writer = ConfigWriter()
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    writer.write(blocker / "x.json", b"{}")  # its parent is a file: mkdir fails
    with pytest.raises(OSError):
        writer.durable().result(10)
    writer.write(tmp_path / "ok.json", b"{}")
    writer.durable().result(10)
    assert writer.failures == 1 and writer.writes == 1
    writer.close()


def test_a_failure_finished_before_the_caller_asks_is_still_reported_once(tmp_path: Path) -> None:
    writer = ConfigWriter()
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    writer.write(blocker / "x.json", b"{}")
    while not writer.idle:  # the batch is done before anyone asks
        threading.Event().wait(0.01)
    with pytest.raises(OSError):
        writer.durable().result(10)
    writer.durable().result(10)  # reported once: a caller without a write of its own is not failed
    writer.close()
