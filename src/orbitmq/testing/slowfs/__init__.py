"""A slow disk: a FUSE passthrough whose syncs take a set time and whose writes can stall.

    with SlowDisk(tmp_path / "disk") as disk:    # disk.mountpoint: a directory on the slow disk
        disk.set_delays(fsync=1.0)               # every fsync/fdatasync now takes a second more

`SlowFS` (fs.py) is the file system; tests skip with `unavailable_reason()` (the power-loss disk's
check: /dev/fuse, fusermount3, mfusepy on libfuse3) where FUSE cannot run.
"""

from orbitmq.testing.slowfs.disk import SlowDisk, unavailable_reason

__all__ = ["SlowDisk", "unavailable_reason"]
