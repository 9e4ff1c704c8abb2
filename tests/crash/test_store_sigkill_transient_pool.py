"""SIGKILL a real process appending through the transient store pool; every acknowledged (committed and
flushed) message must survive recovery, with unique, gap-free queue offsets in log order.

The child (pool_store_writer.py) acknowledges a group only after commit + flush. The parent kills it
twice mid-stream (reusing the recovered directory with the pool on again), then recovers in-process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from orbitmq.message.codec import decode_records
from orbitmq.store import MessageStore, StoreConfig

WRITER = Path(__file__).with_name("pool_store_writer.py")
Ack = tuple[str, int, int, int]


def _parse(line: str) -> Ack:
    _, uniq, q, qo, phy = line.split()
    return uniq, int(q), int(qo), int(phy)


def _run_and_kill(root: Path, run: str, acks_wanted: int) -> list[Ack]:
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(root), run],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acks: list[Ack] = []
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.strip() == "ready", first + (proc.stderr.read() if proc.stderr else "")
        while len(acks) < acks_wanted:
            line = proc.stdout.readline()
            assert line.startswith("ack "), line + (proc.stderr.read() if proc.stderr else "")
            acks.append(_parse(line))
        os.kill(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
        acks += [_parse(line) for line in rest.splitlines() if line.startswith("ack ")]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
    return acks


def test_acknowledged_messages_survive_sigkill_with_transient_store_pool(tmp_path: Path) -> None:
    root = tmp_path / "store"
    acked: list[Ack] = []
    for run, wanted in (("a", 400), ("b", 500)):
        acked += _run_and_kill(root, run, wanted)
    config = StoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=100 * 20,
        max_hash_slot_num=64,
        max_index_num=300,
    )
    store = MessageStore(config)
    assert store.load() is False  # killed: abnormal recovery
    store.start()
    try:
        by_queue: dict[int, dict[int, tuple[str, int]]] = {}
        for q in range(4):
            offset = 0
            seen: dict[int, tuple[str, int]] = {}
            while True:
                got = store.get_messages("check", "Crash", q, offset, 32, None)
                if not got.message_count:
                    break
                for m in decode_records(b"".join(got.buffers)):
                    assert m.queue_offset not in seen
                    seen[m.queue_offset] = (m.unique_id or "", m.commit_log_offset)
                offset = got.next_begin_offset
            assert sorted(seen) == list(range(len(seen)))  # gap-free
            phys = [seen[i][1] for i in sorted(seen)]
            assert phys == sorted(phys)
            by_queue[q] = seen
        for uniq, q, qo, phy in acked:
            assert by_queue[q].get(qo) == (uniq, phy), (uniq, q, qo, phy)
        for uniq, _, _, phy in acked[:: max(1, len(acked) // 40)]:
            found = store.query_message("Crash", uniq, 4, 0, 1 << 62)
            assert [m.commit_log_offset for m in decode_records(b"".join(found.buffers))] == [phy]
    finally:
        store.shutdown()
