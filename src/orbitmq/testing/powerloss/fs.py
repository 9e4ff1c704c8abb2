"""PowerLossFS: the FUSE operations of a file system that keeps unsynced file data in its own memory.

Run by `python -m orbitmq.testing.powerloss BACKING MOUNTPOINT`, one single-threaded daemon per mount:
the daemon is the disk's volatile cache (SIGKILL is the power cut), the backing directory the platter.
What is durable when: volatile.py.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from orbitmq.testing.powerloss.volatile import VolatileFile

STAT_KEYS = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size")
TIME_KEYS = ("st_atime", "st_mtime", "st_ctime")
STATVFS_KEYS = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_namemax")


def _fuse_error(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class PowerLossFS:
    """mfusepy's Operations protocol, duck-typed (mfusepy is untyped, so no subclassing). File data
    reaches the backing directory only on fsync/fdatasync/msync of that file; namespace changes and
    explicit truncates are durable at once (a `dirsync` mount).
    """

    use_ns = True  # utimens gets integer nanoseconds

    def __init__(self, backing: str) -> None:
        self.backing = os.path.realpath(backing)
        self.files: dict[str, VolatileFile] = {}  # mount path -> its volatile state (until unlink)

    # ---- helpers ------------------------------------------------------------------------------
    def _real(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    def _file(self, path: str) -> VolatileFile:
        vf = self.files.get(path)
        if vf is None:
            vf = VolatileFile(self._real(path))
            self.files[path] = vf
        return vf

    # ---- lifecycle ----------------------------------------------------------------------------
    def init(self, path: str) -> None:
        return None

    def destroy(self, path: str) -> None:
        for vf in self.files.values():
            vf.close()
        self.files.clear()

    # ---- metadata -----------------------------------------------------------------------------
    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        st = os.lstat(self._real(path))
        attrs = {key: getattr(st, key) for key in STAT_KEYS}
        attrs.update({key: getattr(st, key + "_ns") for key in TIME_KEYS})
        vf = self.files.get(path)
        if vf is not None:
            attrs["st_size"] = vf.size
        return attrs

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self.backing)
        return {key: getattr(st, key) for key in STATVFS_KEYS}

    def access(self, path: str, amode: int) -> int:
        if not os.path.lexists(self._real(path)):
            raise _fuse_error(errno.ENOENT)
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._real(path), mode)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        if times is None:
            os.utime(self._real(path))
        else:
            os.utime(self._real(path), ns=times)
        return 0

    # ---- namespace: durable at once -----------------------------------------------------------
    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._real(path))]

    def opendir(self, path: str) -> int:
        return 0

    def releasedir(self, path: str, fh: int) -> int:
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        return 0  # directory entries are already durable

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._real(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._real(path))
        return 0

    def create(self, path: str, mode: int, flags: int = 0) -> int:
        fd = os.open(self._real(path), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, mode)
        os.close(fd)
        old = self.files.pop(path, None)
        if old is not None:
            old.close()
        self._file(path)
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._real(path))
        vf = self.files.pop(path, None)
        if vf is not None:
            vf.close()
        return 0

    def rename(self, old: str, new: str) -> int:
        os.rename(self._real(old), self._real(new))
        replaced = self.files.pop(new, None)
        if replaced is not None:
            replaced.close()
        # The volatile state moves with the file (and with every file under a renamed directory).
        prefix = old.rstrip("/") + "/"
        for path in [p for p in self.files if p == old or p.startswith(prefix)]:
            self.files[new + path[len(old) :]] = self.files.pop(path)
        return 0

    # ---- data: volatile until fsync -----------------------------------------------------------
    def open(self, path: str, flags: int) -> int:
        vf = self._file(path)
        if flags & os.O_TRUNC:
            vf.truncate(0)
        return 0

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return self._file(path).read(offset, size)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return self._file(path).write(offset, data)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        self._file(path).truncate(length)
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> int:
        # Block reservation is meaningless in memory; callers fall back to staying sparse.
        raise _fuse_error(errno.EOPNOTSUPP)

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        self._file(path).sync()
        return 0

    def flush(self, path: str, fh: int) -> int:
        return 0  # close(2) is not a sync

    def release(self, path: str, fh: int) -> int:
        return 0  # the volatile pages outlive the descriptor, as a page cache does
