"""`orbitmq admin watch`: the last snapshot of a group's lag and consume TPS (--json and table), and
the rich rendering of admin tables on a terminal (plain mqadmin layout when captured)."""

from __future__ import annotations

import asyncio
import io

import pytest

from orbitmq.admin import table as admin_table
from orbitmq.admin.api import AdminClient
from orbitmq.message.model import MessageQueue

from .conftest import AdminRun, unique


async def _commit(namesrv: str, group: str, mq: MessageQueue, offset: int) -> None:
    async with AdminClient(namesrv) as client:
        await client.commit_offset(group, mq, offset)


def test_watch_reports_lag_and_tps(admin: AdminRun) -> None:
    topic, group = unique("WatchT"), unique("watch-g")
    admin.ok("updateTopic", "-b", admin.broker, "-t", topic, "-r", "1", "-w", "1")
    for i in range(4):
        admin.ok("sendMessage", "-t", topic, "-p", f"w{i}", "-b", "broker-a", "-i", "0")
    # The group reads two messages (a pull counted by the broker) and commits offset 2.
    admin.ok("consumeMessage", "-t", topic, "-b", "broker-a", "-i", "0", "-o", "0", "-c", "2", "-g", group)
    asyncio.run(_commit(admin.namesrv, group, MessageQueue(topic, "broker-a", 0), 2))
    data = admin.json("watch", "-g", group, "-t", topic, "--count", "2", "--interval", "0.1")
    assert data["diffTotal"] == 2
    assert data["lagHistory"] == [2, 2]
    assert data["consumeTps"] > 0
    text = admin.ok("watch", "-g", group, "-t", topic, "--count", "1")
    assert "Diff Total: 2" in text and text.startswith("#Topic")


def test_tables_use_rich_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = admin_table.format_table(["#A", "#B"], [["x", "[y]"]])
    assert plain.splitlines() == ["#A  #B", "x   [y]"]

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr("sys.stdout", Tty())
    fancy = admin_table.format_table(["#A", "#B"], [["x", "[y]"]])
    assert "┃" in fancy or "│" in fancy  # a box-drawn table
    assert "[y]" in fancy  # cell text is not markup
