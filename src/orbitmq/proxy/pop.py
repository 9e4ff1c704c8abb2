"""Receive and ack for 5.x consumers (POP semantics), kept by the proxy over the broker's pull and offsets.

A received message is invisible to its group for its invisible duration; an ack removes it; one not
acked in time is delivered again with its attempt counted, and after the group's max attempts goes to
%DLQ%group (CONSUMER_SEND_MSG_BACK, delay level -1). A new group starts at the queues' ends (RocketMQ 5's
ConsumeInitMode.MAX). The in-flight table lives in this process; the group's consume offset in the
broker only ever moves up to the oldest message not yet acked, so after a restart nothing un-acked is
lost (it comes again, its attempt count starting over) but acked messages above it come again too.
RocketMQ 5's broker-side POP (checkpoints in the store, the remoting POP codes) is not built yet.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from orbitmq.message.model import MessageExt
from orbitmq.message.record_decode import decode_records
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.sql92 import Selector
from orbitmq.proxy.backend import LocalBroker
from orbitmq.proxy.local_channel import LocalChannel
from orbitmq.proxy.route import find_topic
from orbitmq.proxy.status import Code, ProxyError, from_remoting

FLAG_SUBSCRIPTION: Final = 0x4  # the pull carries its own subscription (the broker filters by tag)
TIMEOUT_S: Final = 5.0


@dataclass(frozen=True, slots=True)
class PopLimits:
    max_in_flight_per_group: int = 65536
    poll_interval_s: float = 0.1


@dataclass(slots=True)
class InFlight:
    message: MessageExt
    token: str
    visible_at: float
    attempt: int


@dataclass(slots=True)
class QueueState:
    next_offset: int = -1  # the fetch cursor; -1 until read from the broker
    committed: int = -1
    in_flight: dict[int, InFlight] = field(default_factory=dict)  # queue offset -> delivery


@dataclass(slots=True)
class GroupState:
    queues: dict[int, QueueState] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    turn: int = 0
    # No delivery becomes visible again before this: a receive skips the in-flight scan until then.
    earliest_visible: float = float("inf")

    def in_flight(self) -> int:
        return sum(len(q.in_flight) for q in self.queues.values())


@dataclass(frozen=True, slots=True)
class Delivery:
    message: MessageExt
    receipt_handle: str
    attempt: int


def receipt_handle(queue_id: int, offset: int, token: str) -> str:
    return f"{queue_id}:{offset}:{token}"


def parse_handle(handle: str) -> tuple[int, int, str]:
    parts = handle.split(":")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit() or not parts[2]:
        raise ProxyError(Code.INVALID_RECEIPT_HANDLE, f"not a receipt handle of this endpoint: {handle!r}")
    return int(parts[0]), int(parts[1]), parts[2]


class PopService:
    """The in-flight state of every (group, topic) this endpoint's consumers receive from."""

    def __init__(
        self,
        broker: LocalBroker,
        limits: PopLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.broker = broker
        self.limits = limits or PopLimits()
        self._clock = clock
        self._groups: dict[tuple[str, str], GroupState] = {}

    def _group(self, group: str, topic: str) -> GroupState:
        state = self._groups.get((group, topic))
        if state is None:
            state = self._groups[(group, topic)] = GroupState()
        return state

    async def receive(
        self,
        channel: LocalChannel,
        *,
        group: str,
        topic: str,
        batch: int,
        invisible_s: float,
        poll_s: float,
        tags: str,
        max_attempts: int,
        selector: Selector | None = None,
    ) -> list[Delivery]:
        """Up to `batch` messages (those `tags` and `selector` take), waiting up to `poll_s` for the
        first (empty list: none came). Messages the filter leaves are passed, as a pull passes them."""
        deadline = self._clock() + poll_s
        state = self._group(group, topic)
        while True:
            async with state.lock:
                found = await self._take(
                    channel,
                    state,
                    group=group,
                    topic=topic,
                    batch=batch,
                    invisible_s=invisible_s,
                    tags=tags,
                    max_attempts=max_attempts,
                    selector=selector,
                )
            if found or self._clock() >= deadline:
                return found
            await asyncio.sleep(min(self.limits.poll_interval_s, max(deadline - self._clock(), 0.0)))

    async def _take(
        self,
        channel: LocalChannel,
        state: GroupState,
        *,
        group: str,
        topic: str,
        batch: int,
        invisible_s: float,
        tags: str,
        max_attempts: int,
        selector: Selector | None,
    ) -> list[Delivery]:
        now = self._clock()
        out: list[Delivery] = []
        # First the messages whose invisible time passed: again, or to the DLQ after the last attempt.
        scan = now >= state.earliest_visible
        earliest = float("inf")  # (kept only once the scan is through: a failure leaves it to scan again)
        for queue_id, queue in sorted(state.queues.items()) if scan else ():
            for offset, flight in sorted(queue.in_flight.items()):
                if len(out) >= batch or flight.visible_at > now:
                    earliest = min(earliest, flight.visible_at)
                    continue
                if flight.attempt >= max_attempts:
                    await self._dead_letter(channel, group, flight.message, max_attempts)
                    del queue.in_flight[offset]
                    continue
                flight.attempt += 1
                flight.token = secrets.token_hex(8)
                flight.visible_at = now + invisible_s
                earliest = min(earliest, flight.visible_at)
                out.append(
                    Delivery(flight.message, receipt_handle(queue_id, offset, flight.token), flight.attempt)
                )
        if scan:
            state.earliest_visible = earliest
        # Then new messages, the queues taken in turn.
        queue_count = find_topic(self.broker, topic).read_queue_nums
        room = self.limits.max_in_flight_per_group - state.in_flight()
        for i in range(queue_count):
            if len(out) >= batch or room <= 0:
                break
            queue_id = (state.turn + i) % queue_count
            queue = state.queues.setdefault(queue_id, QueueState())
            if queue.next_offset < 0:  # (committed stays -1: the start is committed below, kept)
                queue.next_offset = await self._start_offset(channel, group, topic, queue_id)
            if self.broker.store.get_max_offset_in_queue(topic, queue_id) <= queue.next_offset:
                continue  # nothing new: no pull (an idle long poll looks here every poll interval)
            wanted = min(batch - len(out), room)
            for message in await self._pull(
                channel, queue, wanted, group=group, topic=topic, queue_id=queue_id, tags=tags
            ):
                if selector is not None and not selector.matches(message.properties):
                    continue  # passed, not delivered
                token = secrets.token_hex(8)
                queue.in_flight[message.queue_offset] = InFlight(message, token, now + invisible_s, 1)
                state.earliest_visible = min(state.earliest_visible, now + invisible_s)
                out.append(Delivery(message, receipt_handle(queue_id, message.queue_offset, token), 1))
                room -= 1
        state.turn = (state.turn + 1) % max(queue_count, 1)
        for queue_id, queue in state.queues.items():
            await self._commit(channel, group, topic, queue_id, queue)
        return out

    def _delivery(self, group: str, topic: str, handle: str) -> tuple[int, QueueState, int]:
        """(queue id, queue state, offset) of the delivery `handle` names, if it is the current one;
        INVALID_RECEIPT_HANDLE otherwise."""
        queue_id, offset, token = parse_handle(handle)
        queue = self._group(group, topic).queues.get(queue_id)
        flight = queue.in_flight.get(offset) if queue is not None else None
        if queue is None or flight is None or flight.token != token:
            raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "the receipt handle has expired or was acked")
        return queue_id, queue, offset

    async def ack(self, channel: LocalChannel, *, group: str, topic: str, handle: str) -> None:
        await self._forget(channel, group, topic, handle, dead_letter_attempts=None)

    async def dead_letter(
        self, channel: LocalChannel, *, group: str, topic: str, handle: str, attempts: int
    ) -> None:
        """Send a received message to %DLQ%group now (the client gave up on it) and forget it."""
        await self._forget(channel, group, topic, handle, dead_letter_attempts=attempts)

    async def _forget(
        self, channel: LocalChannel, group: str, topic: str, handle: str, *, dead_letter_attempts: int | None
    ) -> None:
        state = self._group(group, topic)
        async with state.lock:
            queue_id, queue, offset = self._delivery(group, topic, handle)
            if dead_letter_attempts is not None:
                await self._dead_letter(channel, group, queue.in_flight[offset].message, dead_letter_attempts)
            del queue.in_flight[offset]
            await self._commit(channel, group, topic, queue_id, queue)

    def change_invisible(self, *, group: str, topic: str, handle: str, invisible_s: float) -> str:
        """Make the message invisible for `invisible_s` from now; its new receipt handle."""
        queue_id, queue, offset = self._delivery(group, topic, handle)
        flight = queue.in_flight[offset]
        flight.token = secrets.token_hex(8)
        flight.visible_at = self._clock() + invisible_s
        state = self._group(group, topic)
        state.earliest_visible = min(state.earliest_visible, flight.visible_at)
        return receipt_handle(queue_id, offset, flight.token)

    # ---- the broker's side -----------------------------------------------------------------

    async def _call(self, channel: LocalChannel, code: int, ext: dict[str, str]) -> RemotingCommand:
        return await channel.invoke(RemotingCommand.request(code, ext), TIMEOUT_S)

    async def _start_offset(self, channel: LocalChannel, group: str, topic: str, queue_id: int) -> int:
        """The group's committed offset, or the queue's end for a new group."""
        header = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
        answer = await self._call(channel, RequestCode.QUERY_CONSUMER_OFFSET, header)
        if answer.code == ResponseCode.SUCCESS and int(answer.ext_fields.get("offset", "-1")) >= 0:
            return int(answer.ext_fields["offset"])
        end = {"topic": topic, "queueId": str(queue_id)}
        answer = await self._call(channel, RequestCode.GET_MAX_OFFSET, end)
        if answer.code != ResponseCode.SUCCESS:
            raise ProxyError(from_remoting(answer.code), answer.remark or "cannot read the queue's offsets")
        return int(answer.ext_fields.get("offset", "0"))

    async def _pull(
        self,
        channel: LocalChannel,
        queue: QueueState,
        wanted: int,
        *,
        group: str,
        topic: str,
        queue_id: int,
        tags: str,
    ) -> Sequence[MessageExt]:
        header = {
            "consumerGroup": group,
            "topic": topic,
            "queueId": str(queue_id),
            "queueOffset": str(queue.next_offset),
            "maxMsgNums": str(wanted),
            "sysFlag": str(FLAG_SUBSCRIPTION),
            "commitOffset": "0",
            "suspendTimeoutMillis": "0",
            "subVersion": "0",
            "subscription": tags or "*",
            "expressionType": "TAG",
        }
        answer = await self._call(channel, RequestCode.PULL_MESSAGE, header)
        next_offset = answer.ext_fields.get("nextBeginOffset")
        if (
            answer.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY, 21)
            and next_offset
        ):
            queue.next_offset = max(queue.next_offset, int(next_offset))  # filtered out, or moved
            return ()
        if answer.code != ResponseCode.SUCCESS:
            raise ProxyError(from_remoting(answer.code), answer.remark or f"pull failed, code {answer.code}")
        messages = decode_records(answer.body_bytes())
        queue.next_offset = int(next_offset) if next_offset else queue.next_offset + len(messages)
        return messages

    async def _commit(
        self, channel: LocalChannel, group: str, topic: str, queue_id: int, queue: QueueState
    ) -> None:
        """Move the group's offset up to the oldest message in flight (or the fetch cursor)."""
        target = min(queue.in_flight) if queue.in_flight else queue.next_offset
        if target <= queue.committed:
            return
        header = {
            "consumerGroup": group,
            "topic": topic,
            "queueId": str(queue_id),
            "commitOffset": str(target),
        }
        answer = await self._call(channel, RequestCode.UPDATE_CONSUMER_OFFSET, header)
        if answer.code == ResponseCode.SUCCESS:
            queue.committed = target

    async def _dead_letter(
        self, channel: LocalChannel, group: str, message: MessageExt, attempts: int
    ) -> None:
        header = {
            "offset": str(message.commit_log_offset),
            "group": group,
            "delayLevel": "-1",
            "originMsgId": message.msg_id,
            "originTopic": message.topic,
            "unitMode": "false",
            "maxReconsumeTimes": str(max(attempts - 1, 0)),
        }
        answer = await self._call(channel, RequestCode.CONSUMER_SEND_MSG_BACK, header)
        if answer.code != ResponseCode.SUCCESS:
            raise ProxyError(from_remoting(answer.code), answer.remark or "the dead letter queue refused it")
