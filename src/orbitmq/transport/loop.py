"""The event loop choice: uvloop when it is installed, the stock asyncio loop otherwise.

Servers and blocking clients call `run(main())`; nothing else in orbitmq picks a loop. Server entry
points wait in `wait_for_stop_signal`. This module must not know about remoting commands or servers.
"""

from __future__ import annotations

import asyncio
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


async def wait_for_stop_signal(announce: Sequence[str]) -> None:
    """Print the `announce` lines (flushed), then return at the first SIGTERM or SIGINT.

    The handlers go in before the lines are printed: tools read the bound addresses from those lines
    and may signal at once, and that signal must stop the server cleanly rather than kill it.
    """
    stop = asyncio.Event()
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
