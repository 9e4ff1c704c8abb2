"""The blocking clients' event loop: one daemon thread per process runs the asyncio client for every
blocking Producer and consumer; blocking calls hand work to it and wait for the outcome.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_ON_THE_LOOP = "blocking client methods cannot be called from the client loop; use orbitmq.client.aio"


class _Reply(Generic[T]):
    """One blocking call's outcome, handed from the loop thread to the caller. The caller waits on a
    lock that the loop releases (one futex wake-up; a concurrent.futures.Future runs a Condition in
    Python code on both sides, and run_coroutine_threadsafe adds a Task per call)."""

    __slots__ = ("_error", "_future", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._future: asyncio.Future[T] | None = None
        self._error: BaseException | None = None

    def start(self, begin: Callable[..., asyncio.Future[T]], args: tuple[Any, ...]) -> None:
        """On the loop."""
        try:
            future = begin(*args)
        except BaseException as exc:  # (validation errors and the like: the caller raises them)
            self._error = exc
            self._lock.release()
            return
        future.add_done_callback(self._done)

    def _done(self, future: asyncio.Future[T]) -> None:
        self._future = future
        self._lock.release()

    def wait(self) -> T:
        self._lock.acquire()
        if self._error is not None:
            raise self._error
        assert self._future is not None
        return self._future.result()  # (its exception, or CancelledError, is raised here)


class LoopThread:
    """The daemon thread running the blocking clients' event loop."""

    _lock = threading.Lock()
    _instance: LoopThread | None = None

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="orbitmq-client-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @classmethod
    def get(cls) -> LoopThread:
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance

    @classmethod
    def shutdown(cls, timeout: float) -> None:
        with cls._lock:
            instance, cls._instance = cls._instance, None
        if instance is not None:
            instance.stop(timeout)

    def refuse_on_loop(self) -> None:
        """Blocking calls wait for the loop (or block on a socket): on the loop itself they would stall it."""
        if threading.current_thread() is self.thread:
            raise RuntimeError(_ON_THE_LOOP)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if threading.current_thread() is self.thread:
            coro.close()  # (never awaited: no "coroutine was never awaited" warning)
        self.refuse_on_loop()
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, begin: Callable[..., asyncio.Future[T]], *args: Any) -> T:
        """`begin(*args)` on the loop (it starts the work and returns its future), then block until that
        future is done: no Task, no coroutine, and one lock for the caller to wait on."""
        self.refuse_on_loop()
        reply: _Reply[T] = _Reply()
        self.loop.call_soon_threadsafe(reply.start, begin, args)
        return reply.wait()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self.submit(coro).result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()


def client_loop() -> LoopThread:
    """The loop thread every blocking client of this process uses (started on first use)."""
    return LoopThread.get()


def shutdown_loop(timeout: float = 10.0) -> None:
    """Stop the background loop thread (shut clients down first); the next blocking call starts a new one."""
    LoopThread.shutdown(timeout)
