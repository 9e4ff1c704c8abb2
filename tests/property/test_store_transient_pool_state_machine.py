"""Store state machine with the transient store pool: append, commit, flush, read, query, clean restart and
crash at a random point at or after the flushed offset -- against a model.

The model keeps two lists: `visible` (committed: readable, indexed, survives a crash up to the cut) and
`pending` (appended to the write buffer only: invisible, lost by a crash, kept by a clean shutdown). A
record moves from pending to visible when `commit()` runs (puts advance the clock past the thorough
interval, so a commit takes everything) or when a segment roll commits the finished segment.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from orbitmq.common.clock import FakeClock
from orbitmq.message.codec import decode_records
from orbitmq.message.hosts import pack_host
from orbitmq.message.property_string import encode_properties
from orbitmq.store import MessageStore, StoreConfig, StoreMessage

SEGMENT = 24 * 1024
QUEUES = 2
CQ_ENTRIES = 40  # entries per consume-queue file: small, so pulls meet file ends
KEYS = ["alpha", "beta", "gamma"]


@dataclass
class Sent:
    ident: int
    queue_id: int
    queue_offset: int
    physical_offset: int
    end: int
    key: str
    body: bytes


def _config(root: str) -> StoreConfig:
    return StoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=CQ_ENTRIES * 20,
        max_hash_slot_num=16,
        max_index_num=60,
        max_message_size=8 * 1024,
        message_index_safe=True,
        transient_store_pool_enable=True,
        transient_store_pool_size=2,
    )


class PoolStoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="orbitmq-pool-sm-")
        self.clock = FakeClock()
        self.store = self._open()
        self.visible: list[Sent] = []
        self.pending: list[Sent] = []
        self.next_ident = 0

    def _open(self) -> MessageStore:
        store = MessageStore(_config(self.root), clock=self.clock)
        store.load()
        store.start()
        assert store.transient_store_pool_active
        return store

    def teardown(self) -> None:
        self.store.shutdown()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(
        queue_id=st.integers(0, QUEUES - 1),
        sizes=st.lists(st.integers(0, 8000), min_size=1, max_size=6),
        key=st.sampled_from(KEYS),
    )
    def put(self, queue_id: int, sizes: list[int], key: str) -> None:
        for size in sizes:
            self._put_one(queue_id, size, key)
        self.clock.advance(0.4)

    def _put_one(self, queue_id: int, size: int, key: str) -> None:
        ident = self.next_ident
        self.next_ident += 1
        body = (b"%d-" % ident * (size // 4 + 1))[:size]
        props = encode_properties({"KEYS": key, "UNIQ_KEY": f"U{ident:08d}", "TAGS": key})
        r = self.store.put_message(
            StoreMessage("SM", queue_id, 0, body, props, 0, 1, pack_host("10.1.1.1", 9))
        )
        assert r.ok
        everything = self.visible + self.pending
        assert r.queue_offset == sum(1 for s in everything if s.queue_id == queue_id)
        if self.pending and self.pending[-1].physical_offset // SEGMENT != r.wrote_offset // SEGMENT:
            self.visible += self.pending  # the roll committed the finished segment
            self.pending = []
        self.pending.append(Sent(ident, queue_id, r.queue_offset, r.wrote_offset, r.end_offset, key, body))

    @rule()
    def commit(self) -> None:
        committed = self.store.commit()
        expected = self.pending[-1].end - self.pending[0].physical_offset if self.pending else 0
        assert committed == expected
        self.visible += self.pending
        self.pending = []

    @rule()
    def flush(self) -> None:
        assert self.store.flush() == self.store.get_max_phy_offset()
        self.store.flush_consume_queues()

    @rule()
    def clean_restart(self) -> None:
        self.store.shutdown()  # commits the pending records
        self.visible += self.pending
        self.pending = []
        self.store = self._open()
        assert self.store.last_exit_ok

    @precondition(lambda self: self.visible or self.pending)
    @rule(where=st.floats(0, 1))
    def crash(self, where: float) -> None:
        flushed = self.store.flushed_offset
        end = self.store.get_max_phy_offset()
        cut = flushed + int((end - flushed) * where)
        self.store.abort()
        directory = os.path.join(self.root, "commitlog")
        for name in sorted(os.listdir(directory)):
            start = int(name)
            if start + SEGMENT <= cut:
                continue
            with open(os.path.join(directory, name), "r+b") as fh:
                keep = max(0, cut - start)
                fh.seek(keep)
                fh.write(bytes(SEGMENT - keep))  # what never reached the disk
        self.pending = []
        self.visible = [s for s in self.visible if s.end <= cut]
        self.store = self._open()
        assert not self.store.last_exit_ok

    @rule(queue_id=st.integers(0, QUEUES - 1), start=st.integers(0, 40))
    def read(self, queue_id: int, start: int) -> None:
        expected = [s for s in self.visible if s.queue_id == queue_id][start:]
        got = self.store.get_messages("g", "SM", queue_id, start, 32, None)
        msgs = decode_records(b"".join(got.buffers))
        assert [(m.queue_offset, m.commit_log_offset, m.body) for m in msgs] == [
            (s.queue_offset, s.physical_offset, s.body) for s in expected[: len(msgs)]
        ]
        # A pull never crosses a consume-queue file (RocketMQ reads one file's index buffer per pull).
        assert len(msgs) == min(len(expected), 32, CQ_ENTRIES - start % CQ_ENTRIES)

    @rule(key=st.sampled_from(KEYS))
    def query(self, key: str) -> None:
        found = self.store.query_message("SM", key, 64, 0, 1 << 62)
        got = [m.commit_log_offset for m in decode_records(b"".join(found.buffers))]
        assert got == [s.physical_offset for s in self.visible if s.key == key][::-1][:64]

    @invariant()
    def only_committed_records_are_visible(self) -> None:
        end = self.store.get_max_phy_offset()
        last_end = self.visible[-1].end if self.visible else 0
        assert end == last_end or (end > last_end and end % SEGMENT == 0 and end - last_end < SEGMENT)
        for q in range(QUEUES):
            assert self.store.get_max_offset_in_queue("SM", q) == sum(
                1 for s in self.visible if s.queue_id == q
            )
        for s in self.pending:
            assert self.store.select_one_message_by_offset(s.physical_offset) is None
            assert self.store.query_message("SM", f"U{s.ident:08d}", 4, 0, 1 << 62).buffers == []


PoolStoreMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=50, deadline=None)
TestPoolStoreStateMachine = PoolStoreMachine.TestCase
