"""`python -m orbitmq.testing.slowfs BACKING MOUNTPOINT CONTROL`: serve SlowFS in the foreground."""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m orbitmq.testing.slowfs BACKING MOUNTPOINT CONTROL", file=sys.stderr)
        return 2
    # libfuse 3: mfusepy would take libfuse 2 first when both are installed.
    os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
    import mfusepy

    from orbitmq.testing.slowfs.fs import SlowFS

    backing, mountpoint, control = argv
    # Multi-threaded: a sync sleeping its delay must not hold the reads and writes of other callers.
    mfusepy.FUSE(SlowFS(backing, control), mountpoint, foreground=True, nothreads=False, fsname="slowfs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
