"""SlowDisk: mounts SlowFS (one daemon process) over a backing directory and sets its delays.

The mount and its removal are the power-loss disk's (PowerLossDisk: wait until mounted, SIGKILL the
daemon, detach lazily); only the daemon differs.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from orbitmq.testing.powerloss.disk import PowerLossDisk, unavailable_reason

__all__ = ["SlowDisk", "unavailable_reason"]


class SlowDisk(PowerLossDisk):
    def __init__(self, workdir: Path) -> None:
        self.control = Path(workdir) / "delays.json"
        self.control.parent.mkdir(parents=True, exist_ok=True)
        self.set_delays()
        super().__init__(workdir)  # mounts (_mount below)

    def _mount(self) -> None:
        paths = [str(self.backing), str(self.mountpoint), str(self.control)]
        self._start_daemon("orbitmq.testing.slowfs", paths, self.workdir / "slowfs.log")

    def power_cut(self) -> None:
        raise NotImplementedError("a slow disk keeps what it was given: use PowerLossDisk for power cuts")

    def set_delays(self, *, fsync: float = 0.0, write: float = 0.0) -> None:
        """From now on each fsync/fdatasync (and directory sync) sleeps `fsync` s, each write `write` s.
        The daemon looks at the control file every 50 ms; this waits that long so the caller can rely
        on the new delays."""
        if fsync < 0 or write < 0:
            raise ValueError(f"delays must be at least 0, not fsync={fsync} write={write}")
        tmp = self.control.with_suffix(".tmp")
        tmp.write_text(json.dumps({"fsync_delay": fsync, "write_delay": write}), encoding="utf-8")
        os.replace(tmp, self.control)
        time.sleep(0.15)

    def __enter__(self) -> SlowDisk:
        return self
