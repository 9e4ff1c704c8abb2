"""What a send waits for before its answer: the group commit (SYNC_FLUSH) and the slave (SYNC_MASTER).

Two ways to wait for the flush. The dispatcher's own sends on a SYNC_FLUSH broker without a slave to wait
for take `group_commit()` (flush_waits.py: a transport `Later`, no coroutine per send). The rest -- a
SYNC_MASTER that also flushes synchronously, and CONSUMER_SEND_MSG_BACK -- await `code_after_wait`:
the store's `request_flush` calls back from the flusher thread, and the outcomes of one flush round are
resolved on the loop in one callback. Either way a send is answered SUCCESS only after the fdatasync
that covers it returned, and FLUSH_DISK_TIMEOUT after syncFlushTimeout ms (a loop timer: the flusher
may be stuck in fdatasync and unable to time anything out itself).
"""

from __future__ import annotations

import asyncio
import collections
import threading
from typing import TYPE_CHECKING

from orbitmq.broker.processors.flush_waits import FlushWaits
from orbitmq.protocol.codes import ResponseCode
from orbitmq.transport.dispatch import Later, answer_together

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext


class SendWaits:
    def __init__(self, app: BrokerContext) -> None:
        self.app = app
        # Group-commit outcomes handed over by the flusher thread, resolved on the loop in one callback
        # per flush round (not one cross-thread wake-up per waiting message).
        self._flushed: list[tuple[asyncio.Future[bool], bool]] = []
        self._flushed_lock = threading.Lock()
        # The syncFlushTimeout backstop: waits in arrival order, so deadlines ascend; one timer at the
        # oldest deadline.
        self._flush_waits: collections.deque[tuple[float, asyncio.Future[bool]]] = collections.deque()
        self._flush_timer: asyncio.TimerHandle | None = None
        self._group_commit: FlushWaits[Later] | None = None

    def group_commit(self) -> FlushWaits[Later]:
        """The `Later`-answered waits (SYNC_FLUSH without a slave to wait for), made at the first use."""
        waits = self._group_commit
        if waits is None:
            store = self.app.store
            flusher = store.flusher
            assert flusher is not None, "the store is loaded before the broker serves"
            waits = self._group_commit = FlushWaits(
                asyncio.get_running_loop(), flusher, store.config.sync_flush_timeout, Later, answer_together
            )
        return waits

    async def code_after_wait(self, end_offset: int) -> int:
        """SUCCESS once the log is flushed through `end_offset` (SYNC_FLUSH) and the slave has it
        (SYNC_MASTER); otherwise the code of the wait that failed."""
        app = self.app
        if app.store.config.sync_flush and not await self.wait_flush(end_offset):
            return ResponseCode.FLUSH_DISK_TIMEOUT
        if app.config.broker_role == "SYNC_MASTER":
            return await app.replication.wait_replicated(end_offset)
        return ResponseCode.SUCCESS

    async def wait_flush(self, end_offset: int) -> bool:
        """Group commit: the flusher thread calls back once the commit log is flushed past `end_offset`."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        flushed = self._flushed
        lock = self._flushed_lock

        def done(ok: bool) -> None:
            with lock:
                first = not flushed
                flushed.append((future, ok))
            if first:
                loop.call_soon_threadsafe(self._resolve_flushed)

        self.app.store.request_flush(end_offset, done)
        if future.done():
            return future.result()
        # The send waits at most syncFlushTimeout (fact sheet 6.8), as RocketMQ's put thread does: a flush
        # that cannot finish in time answers FLUSH_DISK_TIMEOUT (the message stays stored).
        deadline = loop.time() + self.app.store.config.sync_flush_timeout / 1000
        self._flush_waits.append((deadline, future))
        if self._flush_timer is None:
            self._flush_timer = loop.call_at(deadline, self._expire_flush_waits)
        return await future

    def _expire_flush_waits(self) -> None:
        """Answer False to the waits past their deadline; re-arm at the oldest one still waiting."""
        self._flush_timer = None
        loop = asyncio.get_running_loop()
        now = loop.time() + 0.001  # call_at may fire up to the clock resolution early
        waits = self._flush_waits
        while waits and (waits[0][1].done() or waits[0][0] <= now):
            _, future = waits.popleft()
            _resolve(future, False)
        if waits:
            self._flush_timer = loop.call_at(waits[0][0], self._expire_flush_waits)

    def _resolve_flushed(self) -> None:
        with self._flushed_lock:
            outcomes = self._flushed[:]
            self._flushed.clear()
        for future, ok in outcomes:
            _resolve(future, ok)


def _resolve(future: asyncio.Future[bool], ok: bool) -> None:
    if not future.done():
        future.set_result(ok)
