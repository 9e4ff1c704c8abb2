"""The power-loss file system itself: what a cut keeps (synced data, namespace, truncates), what it drops.

Each "gone" case also reads the data back before the cut (so it was really written and cached), and the
written-back cases push dirty pages to the daemon with sync_file_range first: data that reached the
file system but was never synced must still be lost.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

from orbitmq.testing.powerloss import PowerLossDisk

_libc = ctypes.CDLL(None, use_errno=True)
SYNC_FILE_RANGE_ALL = 1 | 2 | 4  # WAIT_BEFORE | WRITE | WAIT_AFTER: write back, no sync request


def write_back_without_sync(fd: int) -> None:
    if _libc.sync_file_range(fd, ctypes.c_int64(0), ctypes.c_int64(0), SYNC_FILE_RANGE_ALL) != 0:
        raise OSError(ctypes.get_errno(), "sync_file_range")


def write_file(path: Path, data: bytes, *, sync: bool) -> None:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_write_without_sync_is_lost(disk: PowerLossDisk) -> None:
    path = disk.mountpoint / "f"
    write_file(path, b"unsynced", sync=False)
    assert path.read_bytes() == b"unsynced"
    disk.power_cut()
    assert path.exists()  # creation is durable at once
    assert path.read_bytes() == b""


def test_fsync_keeps_data_and_later_writes_are_lost(disk: PowerLossDisk) -> None:
    path = disk.mountpoint / "f"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"kept-")
    os.fsync(fd)
    os.write(fd, b"lost")
    os.pwrite(fd, b"K", 0)  # an overwrite of synced bytes is lost too
    os.close(fd)
    assert path.read_bytes() == b"Kept-lost"
    disk.power_cut()
    assert path.read_bytes() == b"kept-"


def test_fdatasync_keeps_data(disk: PowerLossDisk) -> None:
    path = disk.mountpoint / "f"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"x" * 10000)
    os.fdatasync(fd)
    os.close(fd)
    disk.power_cut()
    assert path.read_bytes() == b"x" * 10000


def _mapped(path: Path, size: int) -> tuple[int, mmap.mmap]:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    os.ftruncate(fd, size)
    return fd, mmap.mmap(fd, size, access=mmap.ACCESS_WRITE)


def test_mmap_write_with_msync_is_kept(disk: PowerLossDisk) -> None:
    path = disk.mountpoint / "seg"
    fd, mm = _mapped(path, 64 * 1024)
    mm[100:105] = b"msync"
    mm.flush()  # msync(MS_SYNC)
    mm[20000:20005] = b"dirty"
    write_back_without_sync(fd)
    mm.close()
    os.close(fd)
    disk.power_cut()
    data = path.read_bytes()
    assert len(data) == 64 * 1024  # the truncate that sized it is durable
    assert data[100:105] == b"msync"
    assert data[20000:20005] == bytes(5)


def test_mmap_write_with_fdatasync_is_kept(disk: PowerLossDisk) -> None:
    # The store's way: write through the mapping, fdatasync the descriptor.
    path = disk.mountpoint / "seg"
    fd, mm = _mapped(path, 16 * 1024)
    mm[0:4] = b"data"
    os.fdatasync(fd)
    mm.close()
    os.close(fd)
    disk.power_cut()
    assert path.read_bytes()[:4] == b"data"


def test_mmap_write_without_msync_is_lost_even_when_written_back(disk: PowerLossDisk) -> None:
    path = disk.mountpoint / "seg"
    fd, mm = _mapped(path, 16 * 1024)
    mm[0:6] = b"mapped"
    write_back_without_sync(fd)  # the daemon has it now, unsynced
    mm.close()
    os.close(fd)
    assert path.read_bytes()[:6] == b"mapped"
    disk.power_cut()
    assert path.read_bytes()[:6] == bytes(6)


def test_namespace_changes_and_truncates_are_durable(disk: PowerLossDisk) -> None:
    root = disk.mountpoint
    (root / "dir").mkdir()
    write_file(root / "dir" / "tmp", b"synced", sync=True)
    os.rename(root / "dir" / "tmp", root / "dir" / "final")
    write_file(root / "gone", b"", sync=False)
    os.unlink(root / "gone")
    write_file(root / "big", b"", sync=False)
    os.truncate(root / "big", 12345)
    disk.power_cut()
    assert sorted(p.name for p in root.iterdir()) == ["big", "dir"]
    assert (root / "dir" / "final").read_bytes() == b"synced"
    assert (root / "big").stat().st_size == 12345


def test_rename_carries_unsynced_data_with_the_file(disk: PowerLossDisk) -> None:
    root = disk.mountpoint
    fd = os.open(root / "a", os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"before-rename")
    os.rename(root / "a", root / "b")
    os.fsync(fd)  # syncs the renamed file
    os.close(fd)
    disk.power_cut()
    assert (root / "b").read_bytes() == b"before-rename"


def test_second_cut_keeps_what_the_first_mount_synced(disk: PowerLossDisk) -> None:
    path = disk.mountpoint / "f"
    write_file(path, b"one", sync=True)
    disk.power_cut()
    with open(path, "ab") as f:
        f.write(b"-two")
        f.flush()
        os.fsync(f.fileno())
        f.write(b"-three")
    disk.power_cut()
    assert path.read_bytes() == b"one-two"
    assert disk.cuts == 2
