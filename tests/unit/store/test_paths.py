"""The store's second wall: names never place files outside the store root."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from orbitmq.store.consume_queue import ConsumeQueue
from orbitmq.store.consume_queue_table import ConsumeQueueTable
from orbitmq.store.paths import UnsafeNameError, child_dir


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "/abs", "x\0y", "%DLQ%/../../../x"])
def test_unsafe_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(UnsafeNameError):
        child_dir(str(tmp_path), name)


def test_a_symlink_leading_out_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "cq"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", root / "Linked")
    with pytest.raises(UnsafeNameError):
        child_dir(str(root), "Linked")
    assert child_dir(str(root), "%RETRY%g|x-1") == str(root / "%RETRY%g|x-1")


def test_consume_queues_and_topic_removal_stay_inside(tmp_path: Path) -> None:
    root = tmp_path / "store" / "consumequeue"
    root.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    with pytest.raises(UnsafeNameError):
        ConsumeQueue(str(root), "../../victim", 0, 6000)
    table = ConsumeQueueTable(str(root), 6000)
    with pytest.raises(UnsafeNameError):
        table.remove_topic("../../victim")
    assert victim.is_dir()


def test_loaded_queue_topics_are_interned(tmp_path: Path) -> None:
    # The dispatcher looks queues up by the interned topic names requests carry: keys read from the
    # directory names are interned too, so the lookup matches by identity.
    root = tmp_path / "consumequeue"
    table = ConsumeQueueTable(str(root), 6000)
    table.find_or_create("".join(["dir", "_topic"]), 3).put_entry(0, 100, 0, 0)
    table.close()
    again = ConsumeQueueTable(str(root), 6000)
    again.load()
    cq = again.find(sys.intern("dir_topic"), 3)
    assert cq is not None and cq.topic is sys.intern("".join(["dir", "_topic"]))
    again.close()
