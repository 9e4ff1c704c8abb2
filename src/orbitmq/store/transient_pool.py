"""TransientStorePool: reusable off-file write buffers for the commit log (RocketMQ's TransientStorePool).

With `transientStorePoolEnable` the commit log appends into one of these buffers and the commit step
(commit.py) copies the written bytes into the segment file. Each buffer is an anonymous mapping of the
segment size, backed only where written, reused and never zeroed (the commit copies only the current
segment's bytes). `activation` says whether the pool applies: as in RocketMQ, only with ASYNC_FLUSH on a
non-SLAVE broker (we log why it is ignored otherwise). Knows nothing of records, files or dispatch.
"""

from __future__ import annotations

import mmap

from orbitmq.common.errors import StoreError
from orbitmq.store.config import ASYNC_FLUSH, SLAVE, StoreConfig


def activation(config: StoreConfig) -> tuple[bool, str]:
    """(whether the transient store pool is active, why not when it is enabled but ignored)."""
    if not config.transient_store_pool_enable:
        return False, ""
    if config.flush_disk_type != ASYNC_FLUSH:
        return False, f"flushDiskType is {config.flush_disk_type} (the pool needs ASYNC_FLUSH)"
    if config.broker_role == SLAVE:
        return False, "brokerRole is SLAVE (a slave appends replicated bytes straight to its files)"
    if config.transient_store_pool_size < 1:
        return False, f"transientStorePoolSize is {config.transient_store_pool_size}"
    return True, ""


class TransientStorePool:
    """At most `pool_size` buffers of `buffer_size` bytes, handed out by `borrow` and taken back by
    `give_back`. Single-threaded: only the store's writer borrows and returns."""

    def __init__(self, pool_size: int, buffer_size: int) -> None:
        if pool_size < 1 or buffer_size < 1:
            raise StoreError(f"bad transient store pool: {pool_size} buffers of {buffer_size} bytes")
        self.pool_size = pool_size
        self.buffer_size = buffer_size
        self._free: list[mmap.mmap] = []
        self._allocated = 0
        self._closed = False

    @property
    def allocated(self) -> int:
        """Buffers created so far (lazily, on demand)."""
        return self._allocated

    @property
    def available(self) -> int:
        """Buffers that could be borrowed now (free ones plus those not yet allocated)."""
        return len(self._free) + self.pool_size - self._allocated

    def borrow(self) -> mmap.mmap:
        if self._closed:
            raise StoreError("the transient store pool is closed")
        if self._free:
            return self._free.pop()
        if self._allocated >= self.pool_size:
            raise StoreError(f"no free buffer in the transient store pool ({self.pool_size} in use)")
        try:
            buffer = mmap.mmap(-1, self.buffer_size)
        except OSError as exc:
            raise StoreError(f"cannot allocate a transient store buffer of {self.buffer_size} bytes") from exc
        self._allocated += 1
        return buffer

    def give_back(self, buffer: mmap.mmap) -> None:
        if self._closed:
            buffer.close()
            return
        self._free.append(buffer)

    def close(self) -> None:
        """Release the free buffers (a borrowed one is released when given back)."""
        self._closed = True
        for buffer in self._free:
            buffer.close()
        self._free.clear()
