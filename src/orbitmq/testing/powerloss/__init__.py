"""A file system that loses unsynced writes on demand: proof that durability claims hold a power cut.

`PowerLossDisk` (disk.py) mounts `PowerLossFS` (fs.py, FUSE via mfusepy and libfuse3) and cuts its
power; `volatile.py` holds the rules of what survives. Tests skip with `unavailable_reason()` where
/dev/fuse or fuse3 is missing.
"""

from orbitmq.testing.powerloss.disk import PowerLossDisk, unavailable_reason

__all__ = ["PowerLossDisk", "unavailable_reason"]
