"""SlowFS: a passthrough FUSE file system whose syncs (and, when asked, writes) take a set time.

Every operation goes straight to the backing directory through real file descriptors; fsync, fdatasync
and directory syncs sleep `fsync_delay` seconds first, each write `write_delay`. The daemon serves
requests on several threads (libfuse's multi-threaded loop), so a sleeping sync holds only its caller:
reads and page faults of the same files go on, as they would on a slow but not dead disk.

The delays come from a small JSON file beside the mount (`{"fsync_delay": 1.0, "write_delay": 0.0}`),
re-read when it changes, so a test turns the slowness on after its broker started.
Methods follow mfusepy's Operations protocol; the namespace ones are PowerLossFS's (passthrough).
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time

from orbitmq.testing.powerloss.fs import PowerLossFS

CONTROL_POLL = 0.05  # s between looks at the control file


class Delays:
    """The current delays, re-read from `control` (a JSON object) whenever its mtime changes."""

    def __init__(self, control: str) -> None:
        self.control = control
        self.fsync_delay = 0.0
        self.write_delay = 0.0
        self._mtime: int | None = None
        self._stop = threading.Event()
        self.reload()
        threading.Thread(target=self._watch, name="slowfs-control", daemon=True).start()

    def reload(self) -> None:
        try:
            mtime = os.stat(self.control).st_mtime_ns
        except FileNotFoundError:
            return
        if mtime == self._mtime:
            return
        self._mtime = mtime
        try:
            with open(self.control, encoding="utf-8") as f:
                values = json.load(f)
        except (OSError, ValueError):
            return  # caught mid-write: the next look sees the whole file
        self.fsync_delay = float(values.get("fsync_delay", 0.0))
        self.write_delay = float(values.get("write_delay", 0.0))

    def _watch(self) -> None:
        while not self._stop.wait(CONTROL_POLL):
            self.reload()

    def stop(self) -> None:
        self._stop.set()


class SlowFS(PowerLossFS):
    """The power-loss file system's namespace operations (passthrough there too); file data through real
    descriptors to the backing files, with the delays."""

    def __init__(self, backing: str, control: str) -> None:
        super().__init__(backing)
        self.delays = Delays(control)

    def _sync_delay(self) -> None:
        delay = self.delays.fsync_delay
        if delay > 0:
            time.sleep(delay)

    def destroy(self, path: str) -> None:
        self.delays.stop()

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        self._sync_delay()
        fd = os.open(self._real(path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return 0

    # ---- data ---------------------------------------------------------------------------------
    def create(self, path: str, mode: int, flags: int = os.O_WRONLY) -> int:
        # Writes come with explicit offsets (pwrite), so O_APPEND must not move them.
        return os.open(self._real(path), (flags & ~os.O_APPEND) | os.O_CREAT, mode)

    def open(self, path: str, flags: int) -> int:
        return os.open(self._real(path), flags & ~os.O_APPEND)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        delay = self.delays.write_delay
        if delay > 0:
            time.sleep(delay)
        return os.pwrite(fh, data, offset)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._real(path), length)
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> int:
        if mode != 0:
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
        os.posix_fallocate(fh, offset, size)
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        self._sync_delay()
        if datasync:
            os.fdatasync(fh)
        else:
            os.fsync(fh)
        return 0

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0
