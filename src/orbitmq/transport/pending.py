"""The requests a connection awaits answers for, and how each one ends exactly once.

A table maps opaque -> (waiter, deadline on the loop's clock, timeout, request code); the waiter is
`invoke`'s future or `invoke_callback`'s callback. The answer, the timeout sweep and the close each
take the entry out of the table before they settle its waiter, so no waiter is settled twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final, TypeAlias

from orbitmq.common.errors import RequestTimeoutError
from orbitmq.protocol.command import RemotingCommand

log: Final = logging.getLogger("orbitmq.transport")

# invoke_callback's callback: (response, None) or (None, error), called once on the loop.
ResponseCallback = Callable[[RemotingCommand | None, Exception | None], None]
# What waits for a response: invoke's future or invoke_callback's callback.
Waiter: TypeAlias = "asyncio.Future[RemotingCommand] | ResponseCallback"
Pending: TypeAlias = "dict[int, tuple[Waiter, float, float, int]]"


def answer(waiter: Waiter, response: RemotingCommand) -> None:
    """Settle `waiter` (already taken out of its table) with `response`."""
    if isinstance(waiter, asyncio.Future):
        if not waiter.done():
            waiter.set_result(response)
    else:
        call_back(waiter, response, None)


def fail(waiter: Waiter, error: Exception) -> None:
    """Settle `waiter` (already taken out of its table) with `error`."""
    if isinstance(waiter, asyncio.Future):
        if not waiter.done():
            waiter.set_exception(error)
    else:
        call_back(waiter, None, error)


def call_back(callback: ResponseCallback, response: RemotingCommand | None, error: Exception | None) -> None:
    # The callback runs inside data_received, the sweep timer or connection_lost: its failure must not
    # break the connection or the other pending requests.
    try:
        callback(response, error)
    except Exception:
        log.exception("response callback failed")


def expire(pending: Pending, now: float, remote: str) -> float | None:
    """Fail the requests whose deadline is at or before `now`; the earliest remaining deadline."""
    earliest = None
    expired = []
    for opaque, (_, deadline, _, _) in pending.items():
        if deadline <= now:
            expired.append(opaque)
        elif earliest is None or deadline < earliest:
            earliest = deadline
    for opaque in expired:
        waiter, _, timeout, code = pending.pop(opaque)
        fail(
            waiter,
            RequestTimeoutError(
                f"request code {code} opaque {opaque} to {remote} timed out after {timeout}s"
            ),
        )
    return earliest
