"""The store directory's `lock` file: one store per directory, across processes and within one.

RocketMQ takes a FileLock on byte 0 of `<root>/lock` and writes "lock" there; so do we (fcntl record
lock, the same kind a JVM's FileLock takes on Linux). When the lock is held elsewhere the error names
the directory and the process holding it (F_GETLK reports the holder's PID), so a second broker on
the same store fails with one readable line instead of a traceback.
"""

from __future__ import annotations

import fcntl
import os
import struct

from orbitmq.common.errors import StoreError

# fcntl locks are per process: a second store on the same directory in this process is refused here
# (as a JVM refuses an overlapping FileLock).
_LOCKED_HERE: set[str] = set()

# struct flock on Linux (x86_64 and aarch64): short l_type, short l_whence, off_t l_start, off_t l_len,
# pid_t l_pid, padded to 32 bytes.
_FLOCK = struct.Struct("@hhqqi4x")


class StoreInUseError(StoreError):
    """Another process (or another store in this process) holds the directory's lock."""

    def __init__(self, root: str, holder: int | None) -> None:
        self.root = root
        self.holder_pid = holder
        if holder == os.getpid():
            who = "another store in this process"
        elif holder:
            who = f"process {holder}"
        else:
            who = "another process"
        super().__init__(f"store directory {root} is in use by {who} (lock file {root}/lock)")


def holder_pid(fd: int) -> int | None:
    """The PID holding a write lock on byte 0 of `fd`'s file, or None if unknown (or nobody)."""
    query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    except OSError:
        return None
    l_type, _whence, _start, _len, pid = _FLOCK.unpack(answer)
    return pid if l_type != fcntl.F_UNLCK and pid > 0 else None


def ensure_store_directory(root: str) -> None:
    """Create the store directory (and parents); StoreError with "store directory" in it if impossible."""
    try:
        os.makedirs(root, exist_ok=True)
    except FileExistsError:
        raise StoreError(f"store directory {root} is a file, not a directory") from None
    except OSError as exc:
        raise StoreError(f"store directory {root} cannot be created: {exc.strerror or exc}") from None


def check_store_available(root: str) -> None:
    """Before a server opens ports and starts logging: fail fast with one line if the store directory
    cannot be made or another process holds it (the lock is taken and given back at once)."""
    lock = StoreDirLock(root, os.path.join(root, "lock"))
    lock.acquire()
    lock.release()


class StoreDirLock:
    def __init__(self, root: str, lock_path: str) -> None:
        self.root = root
        self.lock_path = lock_path
        self._fd: int | None = None
        self._real = ""

    def acquire(self) -> None:
        """Create the directory if needed and lock it; StoreError says which of the two failed."""
        root = self.root
        ensure_store_directory(root)
        real = os.path.realpath(self.lock_path)
        if real in _LOCKED_HERE:
            raise StoreInUseError(root, os.getpid())
        try:
            fd = os.open(real, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(
                f"store directory {root}: cannot open its lock file: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            holder = holder_pid(fd)
            os.close(fd)
            raise StoreInUseError(root, holder) from None
        os.pwrite(fd, b"lock", 0)
        self._fd = fd
        self._real = real
        _LOCKED_HERE.add(real)

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, 0)
            finally:
                os.close(self._fd)
                self._fd = None
                _LOCKED_HERE.discard(self._real)
