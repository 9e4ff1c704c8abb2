"""ConfigWriter: the broker's JSON config files written on one thread, off the event loop.

A rewrite (temp file, fsync, rename) can take long on a busy disk; on the loop it would stall every
client. The caller serializes its table on the loop (a consistent snapshot) and hands the bytes over;
a file queued twice is written once, in order. `durable()` resolves once everything submitted is on
disk, so a request that changed a table is answered only then. After `close()` writes are synchronous.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from pathlib import Path

from orbitmq.broker.config_files import write_file

log = logging.getLogger(__name__)


class ConfigWriter:
    def __init__(self, name: str = "config-writer") -> None:
        self._name = name
        self._cond = threading.Condition()
        self._pending: dict[Path, bytes] = {}  # insertion order = write order
        self._waiters: list[tuple[int, Future[None]]] = []
        self._submitted = 0  # sequence number of the last write() call
        self._written = 0  # every write() up to this number is done
        self._thread: threading.Thread | None = None
        self._closed = False
        # The outcome of the newest batch: a caller on the loop that changed a table and asks at once finds
        # its write either still pending (it waits) or in the newest batch (done: this is its outcome).
        self._last_error: BaseException | None = None
        self.writes = 0  # files actually written (coalesced writes count once)
        self.failures = 0

    def write(self, path: Path, data: bytes) -> None:
        """Queue `data` as the new content of `path` (synchronous once closed)."""
        with self._cond:
            if not self._closed:
                self._submitted += 1
                self._pending.pop(path, None)  # re-queued at the end: its newest content is written last
                self._pending[path] = data
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()
                self._cond.notify()
                return
        write_file(path, data)

    def durable(self) -> Future[None]:
        """Done once every write submitted so far is on disk; its exception if one of them failed (when
        nothing is pending: the newest batch's failure, which holds the caller's write if it is the only
        thread submitting, as the broker's loop is)."""
        fut: Future[None] = Future()
        with self._cond:
            if self._written >= self._submitted:
                if self._last_error is None:
                    fut.set_result(None)
                else:  # reported once: a later caller with no write of its own is not failed by it
                    fut.set_exception(self._last_error)
                    self._last_error = None
            else:
                self._waiters.append((self._submitted, fut))
        return fut

    @property
    def idle(self) -> bool:
        return self._written >= self._submitted

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, stop the thread; later writes happen in the caller."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                batch = self._pending
                self._pending = {}
                upto = self._submitted
            error: BaseException | None = None
            for path, data in batch.items():
                try:
                    write_file(path, data)
                    self.writes += 1
                except Exception as exc:  # reported to the waiters; the next change rewrites the file
                    self.failures += 1
                    error = exc
                    log.error("writing %s failed: %s", path, exc)
            with self._cond:
                self._written = upto
                self._last_error = error
                ready = [f for seq, f in self._waiters if seq <= upto]
                self._waiters = [(seq, f) for seq, f in self._waiters if seq > upto]
            for fut in ready:
                if error is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(error)


def persist_json(writer: ConfigWriter | None, path: Path, data: bytes) -> None:
    """`data` to `path`: through `writer` when the broker runs one, else at once (tools, unit tests)."""
    if writer is None:
        write_file(path, data)
    else:
        writer.write(path, data)
