"""KeyIndex.put_run (the batch path's parallel lists, one store timestamp) writes the same index files as
put_hashes with one tuple per key: same bytes, same headers, across file rolls and slot collisions."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from orbitmq.common.clock import FakeClock
from orbitmq.store.key_index import KeyIndex

runs = st.lists(
    st.tuples(st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=40), st.integers(0, 5000)),
    min_size=1,
    max_size=12,
)


def _files(index: KeyIndex) -> list[bytes]:
    for f in index.files:
        f.write_header()
    return [bytes(f.mm) for f in index.files]


@settings(max_examples=60, deadline=None)
@given(runs, st.sampled_from([7, 64]))
# A file fills exactly at a run's end (49 usable entries) and the next run comes 6 s later: its first key's
# time difference counts from the full file's end, the rest from the new file's begin.
@example([(list(range(49)), 0), ([5, 6, 7], 2000)], 7)
def test_put_run_writes_what_put_hashes_writes(plan: list[tuple[list[int], int]], slots: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clock = FakeClock()
        by_tuples = KeyIndex(str(Path(tmp) / "a"), slots, 50, clock)
        by_run = KeyIndex(str(Path(tmp) / "b"), slots, 50, clock)
        try:
            offset = 1000
            ts = 1_700_000_000_000
            for hashes, gap in plan:
                ts += gap * 3
                offsets = [offset + 100 * i for i in range(len(hashes))]
                offset += 100 * len(hashes)
                by_tuples.put_hashes([(h, o, ts) for h, o in zip(hashes, offsets, strict=True)])
                by_run.put_run(hashes, offsets, ts)
                clock.advance(1)
            assert len(by_run.files) == len(by_tuples.files)
            assert _files(by_run) == _files(by_tuples)
            assert [(f.hash_slot_count, f.index_count) for f in by_run.files] == [
                (f.hash_slot_count, f.index_count) for f in by_tuples.files
            ]
        finally:
            by_tuples.close()
            by_run.close()
