"""`python -m orbitmq.testing.powerloss BACKING MOUNTPOINT`: serve PowerLossFS in the foreground.

The process is the volatile cache: SIGKILL it to cut the power (see `disk.py`).
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m orbitmq.testing.powerloss BACKING MOUNTPOINT", file=sys.stderr)
        return 2
    # libfuse 3: mfusepy would take libfuse 2 first when both are installed.
    os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
    import mfusepy

    from orbitmq.testing.powerloss.fs import PowerLossFS

    backing, mountpoint = argv
    # Single-threaded: the file system state needs no locks, and requests are short (memory + pwrite).
    # No kernel_cache/auto_cache: each open of a new mount starts from what the daemon says.
    mfusepy.FUSE(PowerLossFS(backing), mountpoint, foreground=True, nothreads=True, fsname="powerloss")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
