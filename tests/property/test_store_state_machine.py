"""Store state machine: append, flush, read, query, crash at a random point, recover -- against a model.

A crash is simulated as a kill leaves the files: the store stops without its clean-shutdown steps (the
abort file stays), then everything in the commit log from a random point at or after the flushed offset
is zeroed or overwritten with garbage (what never reached the disk). The model says: every message that
ends at or before that point survives with the same physical and queue offsets; nothing else is visible;
consume queues and the key index agree with the log.

Zeros may start at any byte (a process killed mid-copy leaves the rest of the zero-filled segment zero).
Garbage starts at a record boundary: the record format protects only the body with a CRC, so garbage
over a record's topic or properties bytes is undetectable by design (in RocketMQ too); a kill cannot
produce it, only a disk that returns stale non-zero sectors.
"""

from __future__ import annotations

import os
import random
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

SEGMENT = 64 * 1024
QUEUES = 3
CQ_ENTRIES = 40  # entries per consume-queue file: small, so pulls meet file ends
KEYS = ["alpha", "beta", "gamma", "delta"]


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
        # Abnormal recovery then starts early enough to rebuild the whole index (fact sheet 6.7 step 5).
        message_index_safe=True,
    )


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="orbitmq-sm-")
        self.clock = FakeClock()
        self.store = self._open()
        self.sent: list[Sent] = []
        self.next_ident = 0

    def _open(self) -> MessageStore:
        store = MessageStore(_config(self.root), clock=self.clock)
        store.load()
        store.start()
        return store

    def teardown(self) -> None:
        self.store.shutdown()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(queue_id=st.integers(0, QUEUES - 1), size=st.integers(0, 6000), key=st.sampled_from(KEYS))
    def put(self, queue_id: int, size: int, key: str) -> None:
        ident = self.next_ident
        self.next_ident += 1
        body = (b"%d-" % ident * (size // 4 + 1))[:size]
        props = encode_properties({"KEYS": key, "UNIQ_KEY": f"U{ident:08d}", "TAGS": key})
        msg = StoreMessage("SM", queue_id, 0, body, props, 0, 1, pack_host("10.1.1.1", 9))
        r = self.store.put_message(msg)
        assert r.ok
        expected_qo = sum(1 for s in self.sent if s.queue_id == queue_id)
        assert r.queue_offset == expected_qo
        self.sent.append(Sent(ident, queue_id, r.queue_offset, r.wrote_offset, r.end_offset, key, body))
        self.clock.advance(0.4)

    @rule()
    def flush(self) -> None:
        assert self.store.flush() >= self.store.get_max_phy_offset()

    @rule()
    def checkpoint(self) -> None:
        # Flush queues, index and checkpoint: later crashes then recover from a later segment.
        self.store.flush()
        self.store.flush_consume_queues()

    @rule()
    def clean_restart(self) -> None:
        self.store.shutdown()
        self.store = self._open()
        assert self.store.last_exit_ok

    @precondition(lambda self: self.sent)
    @rule(where=st.floats(0, 1), garbage=st.booleans(), seed=st.integers(0, 2**16))
    def crash(self, where: float, garbage: bool, seed: int) -> None:
        flushed = self.store.flushed_offset
        end = self.store.get_max_phy_offset()
        cut = flushed + int((end - flushed) * where)
        if garbage:
            cut = min([s.physical_offset for s in self.sent if s.end > cut], default=cut)
        self.store.abort()
        rng = random.Random(seed)
        directory = os.path.join(self.root, "commitlog")
        for name in sorted(os.listdir(directory)):
            start = int(name)
            if start + SEGMENT <= cut:
                continue
            path = os.path.join(directory, name)
            with open(path, "r+b") as fh:
                data = bytearray(fh.read())
                keep = max(0, cut - start)
                tail = len(data) - keep
                if garbage:
                    junk = bytes(rng.getrandbits(8) for _ in range(min(tail, 256)))
                    data[keep:] = junk + bytes(tail - len(junk))
                else:
                    data[keep:] = bytes(tail)
                fh.seek(0)
                fh.write(data)
        self.sent = [s for s in self.sent if s.end <= cut]
        self.store = self._open()
        assert not self.store.last_exit_ok

    @rule(queue_id=st.integers(0, QUEUES - 1), start=st.integers(0, 60))
    def read(self, queue_id: int, start: int) -> None:
        expected = [s for s in self.sent if s.queue_id == queue_id][start:]
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
        expected = [s.physical_offset for s in self.sent if s.key == key][::-1][:64]
        assert got == expected

    @invariant()
    def queues_agree_with_log(self) -> None:
        end = self.store.get_max_phy_offset()
        last_end = self.sent[-1].end if self.sent else 0
        # The log ends after the last message, or at the next segment when a blank record closed its one.
        assert end == last_end or (end > last_end and end % SEGMENT == 0 and end - last_end < SEGMENT)
        for q in range(QUEUES):
            assert self.store.get_max_offset_in_queue("SM", q) == sum(1 for s in self.sent if s.queue_id == q)
        if self.sent:
            last = self.sent[-1]
            found = self.store.query_message("SM", f"U{last.ident:08d}", 4, 0, 1 << 62)
            record = self.store.select_one_message_by_offset(last.physical_offset)
            assert record is not None
            assert [bytes(b) for b in found.buffers] == [bytes(record)]


StoreMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=40, deadline=None)
TestStoreStateMachine = StoreMachine.TestCase
