"""The event loop choice: uvloop when it is installed, the stock asyncio loop otherwise.

Servers and blocking clients call `run(main())`; nothing else in orbitmq picks a loop. Server entry
points wait in `wait_for_stop_signal`. This module must not know about remoting commands or servers.
"""

from __future__ import annotations

import asyncio
import gc
import signal
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def fast_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory when uvloop is importable, else None (asyncio's default loop)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is optional
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def install_fast_loop() -> bool:
    """Make uvloop the default event loop policy if available; True when it was installed."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is optional
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to completion on a fresh loop (uvloop when installed) and close the loop."""
    with asyncio.Runner(loop_factory=fast_loop_factory()) as runner:
        return runner.run(main)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

# Young-generation GC threshold of a serving process (CPython's default is 700 allocations). Every
# request allocates a few container objects (header dict, command, lists), so the default runs a gen-0
# collection every few dozen requests; few of them form cycles, so collecting far less often costs
# little memory and saves the broker CPU on every message.
SERVING_GC_THRESHOLD = 20000


def tune_gc_for_serving() -> None:
    """Once a server has started: move everything allocated so far (modules, configs, tables) out of the
    collector's sight (gc.freeze) and collect the young generation less often."""
    gc.freeze()
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(SERVING_GC_THRESHOLD, gen0), gen1, gen2)


async def wait_for_stop_signal(announce: Sequence[str], stop: asyncio.Event | None = None) -> None:
    """Print the `announce` lines (flushed), then return at the first SIGTERM or SIGINT (or once `stop`
    is set). The process is serving from now on: its GC is tuned for that first (`tune_gc_for_serving`).

    The handlers go in before the lines are printed: tools read the bound addresses from those lines
    and may signal at once, and that signal must stop the server cleanly rather than kill it.
    """
    tune_gc_for_serving()
    stop = stop or asyncio.Event()
    running = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        running.add_signal_handler(sig, stop.set)
    try:
        for line in announce:
            print(line, flush=True)
        await stop.wait()
    finally:
        for sig in STOP_SIGNALS:
            running.remove_signal_handler(sig)
