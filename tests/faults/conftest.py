"""A small file system per test (a tmpfs the test mounts), unmounted on exit; skipped with the reason
only where this machine cannot mount one."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

MIB = 1 << 20


def _mount_tmpfs(path: Path, size_mib: int) -> str | None:
    """Mount a tmpfs of `size_mib` MiB at `path`; why it cannot be done, or None."""
    if os.geteuid() != 0:
        return "mounting a small file system needs root"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "orbitmq-faults", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if done.returncode == 0 else f"mount -t tmpfs failed: {done.stderr.strip()}"


class SmallDisk:
    """A mounted tmpfs: `path`, `resize(mib)` (live), `fill()` (a file eating every free byte)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / "filler"

    def resize(self, size_mib: int) -> None:
        subprocess.run(
            ["mount", "-o", f"remount,size={size_mib}m", str(self.path)], check=True, capture_output=True
        )

    def fill(self) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for chunk in (bytes(MIB), bytes(4096)):
                try:
                    while os.write(fd, chunk):
                        pass
                except OSError:
                    pass
        finally:
            os.close(fd)

    def free_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def used_ratio(self) -> float:
        st = os.statvfs(self.path)
        return 1 - st.f_bfree / st.f_blocks


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[int], SmallDisk]]:
    mounted: list[Path] = []

    def mount(size_mib: int) -> SmallDisk:
        path = tmp_path / f"disk{len(mounted)}"
        path.mkdir()
        reason = _mount_tmpfs(path, size_mib)
        if reason is not None:
            print(f"skipped: {reason}")
            pytest.skip(reason)
        mounted.append(path)
        return SmallDisk(path)

    try:
        yield mount
    finally:
        for path in mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)
