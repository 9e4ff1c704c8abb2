"""TransactionalMessageCheckService: every `transactionCheckInterval` ms, one check pass over the half
queue, then CHECK_TRANSACTION_STATE (oneway) to one live connection of each half message's producer group.

Only a master runs it; it knows connections only through `channels_of(group)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Iterable

from orbitmq.broker.transaction.service import CheckPass, TransactionalMessageService
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection

log = logging.getLogger("orbitmq.broker.transaction")


class TransactionalMessageCheckService:
    """A check with no live producer connection is still counted (the half message was re-appended with its
    check count raised, as RocketMQ does), so a group that never comes back ends in
    TRANS_CHECK_MAX_TIME_TOPIC.
    """

    def __init__(
        self,
        service: TransactionalMessageService,
        channels_of: Callable[[str], Iterable[object]],
    ) -> None:
        self.service = service
        self._channels_of = channels_of
        self.passes = 0
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Run a pass now (tests and admin tools)."""
        self._wake.set()

    async def run(self) -> None:
        interval = self.service.config.check_interval_ms / 1000
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that races
            # its timeout, and the broker's stop() would wait for this loop forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.run_pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("transaction check pass failed")

    async def run_pass(self) -> CheckPass:
        result = self.service.check_once()
        self.passes += 1
        for group, request in result.requests:
            await self._deliver(group, request)
        return result

    async def _deliver(self, group: str, request: RemotingCommand) -> None:
        live = [c for c in self._channels_of(group) if isinstance(c, Connection) and not c.closed]
        if not live:
            log.info("transaction check for group %s: no producer connected", group)
            return
        conn = random.choice(live)
        try:
            await conn.invoke_oneway(request)
        except Exception as exc:
            log.info("transaction check to %s failed: %s", conn.remote_address, exc)
