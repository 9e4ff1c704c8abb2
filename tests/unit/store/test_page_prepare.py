"""The page preparer (store/page_prepare.py): the commit log's next pages come into the page cache from a
thread of their own, clean (no disk block allocated, nothing to write back), and never change a byte."""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.common.errors import StoreError
from orbitmq.store import MessageStore, StoreConfig
from orbitmq.store.page_prepare import PagePreparer, _Libc
from orbitmq.store.segment_queue import MappedFileQueue

from .conftest import make_message, small_config

PAGE = mmap.PAGESIZE
MiB = 1 << 20

_libc = _Libc()  # mmap and munmap as the preparer calls them
_mincore = ctypes.CDLL(None, use_errno=True).mincore
_mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def resident_pages(path: str, offset: int, length: int) -> int:
    """How many pages of [offset, offset + length) of the file are in the page cache: mincore on a
    mapping of our own reports the file's page cache without faulting anything in."""
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
        assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        vec = ctypes.create_string_buffer(length // PAGE)
        try:
            assert _mincore(addr, length, vec) == 0, os.strerror(ctypes.get_errno())
        finally:
            _libc.munmap(addr, length)
    finally:
        os.close(fd)
    return sum(b & 1 for b in vec.raw)


def write_at_start(files: MappedFileQueue, nbytes: int) -> None:
    f = files.last_file_for_append(0)
    f.write(0, b"\x5a" * nbytes)
    f.wrote_position = nbytes


@pytest.fixture
def files(tmp_path: Path) -> Iterator[MappedFileQueue]:
    # (large and sparse: the kernel reads around each fault, megabytes ahead, so the windows checked lie
    # far from anything touched before)
    queue = MappedFileQueue(str(tmp_path / "commitlog"), 64 * MiB, preallocate=True)
    yield queue
    queue.close()


def test_the_pages_ahead_of_the_write_position_come_into_the_page_cache_clean(files: MappedFileQueue) -> None:
    write_at_start(files, 64 * 1024)
    tail = files.tail
    assert tail is not None
    window = (32 * MiB, MiB)
    assert resident_pages(tail.path, *window) == 0
    blocks = os.stat(tail.path).st_blocks

    preparer = PagePreparer(files, 40 * MiB, chunk=512 * 1024)
    prepared = preparer.prepare_once()

    assert prepared == 40 * MiB
    assert resident_pages(tail.path, *window) == MiB // PAGE
    # clean: no block reserved or allocated (a populating *write* would have), and not one byte changed
    assert os.stat(tail.path).st_blocks == blocks
    with open(tail.path, "rb") as fh:
        assert fh.read(64 * 1024) == b"\x5a" * (64 * 1024)
        assert fh.read(40 * MiB).count(0) == 40 * MiB
    # what is prepared is not prepared again; a moved write position asks for the rest only
    assert preparer.prepare_once() == 0
    tail.wrote_position += MiB
    assert preparer.prepare_once() == MiB


def test_near_a_segments_end_it_prepares_the_next_segments_start(files: MappedFileQueue) -> None:
    write_at_start(files, 4096)
    tail = files.tail
    following = files.next_file
    assert tail is not None and following is not None
    tail.wrote_position = tail.file_size - 1 * MiB

    PagePreparer(files, 3 * MiB).prepare_once()

    assert resident_pages(following.path, 0, 2 * MiB) == 2 * MiB // PAGE
    assert resident_pages(following.path, 32 * MiB, MiB) == 0


def test_a_segment_deleted_meanwhile_is_skipped(files: MappedFileQueue) -> None:
    write_at_start(files, 4096)
    tail = files.tail
    following = files.next_file
    assert tail is not None and following is not None
    os.unlink(tail.path)
    os.unlink(following.path)
    tail.wrote_position = tail.file_size - MiB
    assert PagePreparer(files, 2 * MiB).prepare_once() == 0


def test_a_kernel_without_populate_read_turns_it_off_quietly(files: MappedFileQueue) -> None:
    # (the one stand-in here: this kernel has the call, so its refusal is simulated)
    write_at_start(files, 4096)
    preparer = PagePreparer(files, MiB)
    real = preparer._libc
    assert real is not None
    real_mmap, real_munmap = real.mmap, real.munmap

    class OldKernel:
        mmap = real_mmap
        munmap = real_munmap

        @staticmethod
        def madvise(addr: int, length: int, advice: int) -> int:
            ctypes.set_errno(errno.EINVAL)
            return -1

    preparer._libc = OldKernel()  # type: ignore[assignment]
    preparer.start()  # the thread finds out in its first round and ends
    deadline = time.monotonic() + 10
    while preparer.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not preparer.running
    assert preparer.unsupported is not None and "MADV_POPULATE_READ" in preparer.unsupported
    assert preparer.prepare_once() == 0
    preparer.stop()


def test_the_store_runs_it_from_start_to_shutdown(tmp_path: Path) -> None:
    config = small_config(tmp_path, mapped_file_size_commit_log=4 * MiB, page_prepare_ahead_bytes=MiB)
    store = MessageStore(config)
    store.start()
    try:
        assert any(t.name == "orbitmq-store-page-preparer" for t in threading.enumerate())
        store.put_message(make_message(body=b"x" * 1000))
        deadline = time.monotonic() + 10
        while store.page_preparer.prepared_bytes < MiB - 4096 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.page_preparer.prepared_bytes >= MiB - 4096
    finally:
        store.shutdown()
    assert not store.page_preparer.running
    assert not any(t.name == "orbitmq-store-page-preparer" for t in threading.enumerate())


def test_the_distance_is_a_checked_config_key_and_off_by_default(tmp_path: Path) -> None:
    assert StoreConfig().page_prepare_ahead_bytes == 0
    assert StoreConfig.from_properties({"pagePrepareAheadBytes": "1048576"}).page_prepare_ahead_bytes == MiB
    with pytest.raises(StoreError, match="pagePrepareAheadBytes must be at least 0, not -1"):
        MessageStore(small_config(tmp_path, page_prepare_ahead_bytes=-1))
    store = MessageStore(small_config(tmp_path))
    store.start()
    try:
        assert not store.page_preparer.running
    finally:
        store.shutdown()
