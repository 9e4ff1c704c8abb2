"""PowerLossDisk: a FUSE mount whose unsynced writes a test can throw away, as a power cut would.

After `power_cut()` the mount holds exactly what was fsync'd, fdatasync'd or msync'd, plus namespace
changes and truncates, which are durable at once (volatile.py).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

MOUNT_TIMEOUT = 10.0


@functools.cache
def unavailable_reason() -> str | None:
    """Why a power-loss disk cannot run here (None when it can): a test skips with this reason."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not accessible to this user"
    if shutil.which("fusermount3") is None:
        return "fuse3 is not installed (fusermount3 missing; scripts/install-dev installs it)"
    probe = subprocess.run(
        [sys.executable, "-c", "import os; os.environ['FUSE_LIBRARY_NAME'] = 'fuse3'; import mfusepy"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"mfusepy/libfuse3 cannot load ({last}); scripts/install-dev installs them"
    return None


def _mounted(path: Path) -> bool:
    """Listed in the mount table (os.path.ismount says False for a mount whose daemon died)."""
    target = os.path.realpath(path)
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        # Field 5 is the mount point, with spaces and the like octal-escaped.
        return any(line.split()[4].encode().decode("unicode_escape") == target for line in table)


class PowerLossDisk:
    """A mount of `workdir`'s backing directory through a PowerLossFS daemon.

        with PowerLossDisk(tmp_path / "disk") as disk:      # disk.mountpoint is a directory
            ... run a broker with its store under disk.mountpoint, kill it ...
            disk.power_cut()      # SIGKILL the daemon (its memory: every unsynced page), detach the mount,
                                  # mount a fresh daemon over the same backing directory

    Processes using the old mount must be dead before the cut, as the power would have them. The kernel
    cannot bring unsynced data back: the dead daemon's connection is aborted, so the old mount's dirty
    page cache can never be written anywhere, and the new mount is a new superblock with new inodes.
    """

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.backing = self.workdir / "platter"
        self.mountpoint = self.workdir / "mnt"
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.cuts = 0
        self._daemon: subprocess.Popen[bytes] | None = None
        self._mount()

    def _mount(self) -> None:
        log = self.workdir / f"daemon-{self.cuts}.log"
        self._start_daemon("orbitmq.testing.powerloss", [str(self.backing), str(self.mountpoint)], log)

    def _start_daemon(self, module: str, args: list[str], log: Path) -> None:
        """Run the FUSE daemon `module` (its output to `log`) and wait until its mount answers."""
        with open(log, "ab") as err:
            self._daemon = subprocess.Popen(
                [sys.executable, "-m", module, *args], stdin=subprocess.DEVNULL, stdout=err, stderr=err
            )
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not os.path.ismount(self.mountpoint):  # mounted and answering
            if self._daemon.poll() is not None or time.monotonic() > deadline:
                self._kill_daemon()
                raise RuntimeError(f"{module} FUSE daemon did not mount: {log.read_text(errors='replace')}")
            time.sleep(0.02)

    def _kill_daemon(self) -> None:
        if self._daemon is not None:
            if self._daemon.poll() is None:
                self._daemon.kill()
            self._daemon.wait()
            self._daemon = None

    def _detach(self) -> None:
        if _mounted(self.mountpoint):
            # Lazy: a mount with an aborted connection cannot be unmounted cleanly.
            subprocess.run(
                ["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True, check=False
            )
        if _mounted(self.mountpoint):
            subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True, check=False)
        if _mounted(self.mountpoint):
            raise RuntimeError(f"cannot detach {self.mountpoint}")

    def power_cut(self) -> None:
        """Lose every unsynced write, then mount the disk again (same path, fresh daemon and inodes)."""
        self._kill_daemon()
        self._detach()
        self.cuts += 1
        self._mount()

    def close(self) -> None:
        self._kill_daemon()
        self._detach()

    def __enter__(self) -> PowerLossDisk:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
