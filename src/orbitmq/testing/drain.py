"""Read a whole queue back through a broker, as the tests that check "every acknowledged message is
there" do: pull from an offset until the broker has nothing more, no subscription filter."""

from __future__ import annotations

from orbitmq.client.api import MQClientAPI
from orbitmq.message.model import MessageExt, MessageQueue


async def drain_queue(
    api: MQClientAPI,
    broker_addr: str,
    mq: MessageQueue,
    *,
    group: str,
    offset: int = 0,
    max_nums: int = 32,
    timeout: float = 5.0,
) -> list[MessageExt]:
    """Every message of `mq` from `offset` on, in queue order (plain pulls, nothing committed)."""
    out: list[MessageExt] = []
    while True:
        result = await api.pull_plain(
            broker_addr, mq, offset, group=group, max_nums=max_nums, timeout=timeout
        )
        if not result.messages:
            return out
        out += result.messages
        offset = result.next_begin_offset
