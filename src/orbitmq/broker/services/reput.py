"""What the services that hold messages back share (delay levels, the timer wheel): a step repeated on a
period that survives its failures, and putting a held message again, to its real topic, as it was sent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from orbitmq.message.model import MessageExt
from orbitmq.store.message_store import MessageStore
from orbitmq.store.results import PutMessageResult
from orbitmq.store.store_message import stored_again

log = logging.getLogger("orbitmq.broker")


async def repeat(step: Callable[[], object], interval: float, backoff: float, what: str) -> None:
    """Runs `step` every `interval` s (awaiting what it returns, if anything: work it hands to a thread);
    a failure is logged and the step retried after `backoff` s."""
    while True:
        try:
            pending = step()
            if isinstance(pending, Awaitable):
                await pending
        except Exception:
            log.exception("%s failed; retrying in %ss", what, backoff)
            await asyncio.sleep(backoff)
            continue
        await asyncio.sleep(interval)


def put_again(
    store: MessageStore, msg: MessageExt, topic: str, queue_id: int, properties: dict[str, str]
) -> PutMessageResult:
    """`msg` (a decoded record) stored in `topic`/`queue_id` with body, flag, sys flag, born host/time and
    reconsume times kept and `properties` as its properties."""
    return store.put_message(stored_again(msg, topic, queue_id, properties, msg.reconsume_times))
