"""Faults of a real machine made for real processes: a small file system per test (a tmpfs, or an ext4
image on a loop device, that the test mounts), a slow disk (FUSE, orbitmq.testing.slowfs) and an hour of
client churn (orbitmq.testing.churn). Everything here is bounded in time, unmounted and stopped on exit;
a test skips, with the reason, only where this machine cannot make its fault."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.requests import create_topic_ext, pull_ext, send_ext
from orbitmq.testing.slowfs import SlowDisk, unavailable_reason
from orbitmq.transport import RemotingClient

MIB = 1 << 20


def _run(*argv: str) -> str | None:
    """Run a mount tool; its complaint, or None when it worked."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else f"{' '.join(argv[:2])} failed: {done.stderr.strip()}"


def _mount(path: Path, kind: str, size_mib: int) -> str | None:
    """Mount a `kind` file system of `size_mib` MiB at `path`; why it cannot be done, or None."""
    if os.geteuid() != 0:
        return "mounting a small file system needs root"
    if kind == "tmpfs":
        return _run("mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "orbitmq-faults", str(path))
    if shutil.which("mkfs.ext4") is None:
        return "mkfs.ext4 is not installed"
    image = path.with_suffix(".img")
    with open(image, "wb") as f:
        f.truncate(size_mib * MIB)
    # -m 0: no blocks reserved for root (root would write into them, other users not)
    return _run("mkfs.ext4", "-q", "-F", "-m", "0", str(image)) or _run(
        "mount", "-o", "loop", str(image), str(path)
    )


class SmallDisk:
    """A mounted small file system: `path`, `ballast(n)` (a file to delete later), `fill()` (a file
    eating every free byte)."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.filler = path / "filler"

    def ballast(self, size: int) -> Path:
        """A file of `size` bytes (space a test gives back later by deleting it)."""
        path = self.path / "ballast"
        with open(path, "wb") as f:
            f.write(bytes(size))
        return path

    def total_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_blocks * st.f_frsize

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
def small_disk(tmp_path: Path) -> Iterator[Callable[..., SmallDisk]]:
    mounted: list[Path] = []

    def mount(size_mib: int, kind: str = "tmpfs") -> SmallDisk:
        path = tmp_path / f"disk{len(mounted)}"
        path.mkdir()
        reason = _mount(path, kind, size_mib)
        if reason is not None:
            print(f"skipped: {reason}")
            pytest.skip(reason)
        mounted.append(path)
        return SmallDisk(path, kind)

    try:
        yield mount
    finally:
        for path in mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


TIMEOUT = 10.0


@pytest.fixture
def slow_disk(tmp_path: Path) -> Iterator[SlowDisk]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"slow-disk file system unavailable: {reason}")
    with SlowDisk(tmp_path / "disk") as disk:
        yield disk


class Raw:
    """Raw requests to one address over this object's own connection (one RemotingClient each)."""

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.client = RemotingClient()

    async def call(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
        return await self.client.invoke(self.addr, RemotingCommand.request(code, ext, body), TIMEOUT)

    async def create_topic(self, topic: str, queues: int = 1) -> RemotingCommand:
        return await self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_ext(topic, queues))

    async def send(self, topic: str, body: bytes, queue_id: int = 0) -> RemotingCommand:
        ext = send_ext(topic, group="faults-pg", queue_id=queue_id)
        return await self.call(RequestCode.SEND_MESSAGE_V2, ext, body)

    async def pull(self, topic: str, offset: int, queue_id: int = 0) -> RemotingCommand:
        return await self.call(
            RequestCode.PULL_MESSAGE, pull_ext("faults-cg", topic, queue_id, offset, max_nums=8)
        )

    async def route(self, topic: str) -> RemotingCommand:
        return await self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})

    async def close(self) -> None:
        await self.client.close()
