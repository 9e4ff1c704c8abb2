"""ScheduleMessageService: delivers delayed messages (delay levels) when their time comes.

A message sent with DELAY=n is stored in SCHEDULE_TOPIC_XXXX queue n-1 (the send path redirects it)
and re-put to its REAL_TOPIC / REAL_QID when due. Only a master runs it; a poison message never blocks
its level.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from orbitmq.broker.config_files import dumps, read_json_file
from orbitmq.broker.config_writer import persist_json
from orbitmq.broker.services.reput import put_again, repeat
from orbitmq.broker.topics import SCHEDULE_TOPIC, TRANS_HALF_TOPIC
from orbitmq.message import properties as P
from orbitmq.message.record_decode import decode_record
from orbitmq.message.validation import topic_problem
from orbitmq.protocol.java_values import INT_MAX, parse_int
from orbitmq.store.results import PutMessageStatus

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext

log = logging.getLogger("orbitmq.broker")

SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"
CHECK_INTERVAL = 0.1
ERROR_BACKOFF = 10.0
BATCH = 32
# Store answers about the message itself: retrying cannot help.
_POISON = frozenset({PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED})


class PoisonMessage(Exception):
    """This delayed message can never be delivered (the reason is the text)."""


class StoreBusy(Exception):
    """The store cannot take messages now: the level waits and the pass is retried later."""


class ScheduleMessageService:
    """Walks each level's queue from the offset kept in delayOffset.json; an entry whose delivery time (store
    timestamp + the level's delay) has come is re-put to its REAL_TOPIC / REAL_QID with body, flag, sys
    flag, born host/time and reconsume times kept and the properties unchanged (DELAY, REAL_TOPIC and
    REAL_QID stay, as in RocketMQ). Queues are re-checked every 100 ms; offsets persist every 10 s and at
    shutdown (`{"offsetTable":{"1":12,...}}`, fastjson's bare int keys accepted when loading). Messages
    whose real topic is the transaction half topic are dropped.

    A message that can never be re-put (no or an illegal REAL_TOPIC, a REAL_QID that is not a queue id, a
    store answer that says the message itself is wrong) is skipped with a warning naming its offset
    message id and counted in `skipped` (runtime info `scheduleMessageSkipped`); it stays readable in
    SCHEDULE_TOPIC_XXXX. Only a store that cannot take any message now (not running, slave, disk full)
    makes the level wait and retry.
    """

    def __init__(self, app: BrokerContext) -> None:
        self.app = app
        self.offsets: dict[int, int] = {}  # delay level -> next offset in queue level-1
        self.delivered = 0
        self.skipped = 0

    @property
    def path(self) -> Any:
        return self.app.config.config_dir / "delayOffset.json"

    def load(self) -> None:
        data = read_json_file(self.path)
        if not isinstance(data, dict):
            return
        for level, offset in (data.get("offsetTable") or {}).items():
            try:
                self.offsets[int(level)] = int(offset)
            except (TypeError, ValueError):
                log.warning("delayOffset.json: skipping level %r", level)

    def to_json_dict(self) -> dict[str, Any]:
        return {"offsetTable": {str(k): v for k, v in sorted(self.offsets.items())}}

    def persist(self) -> None:
        persist_json(self.app.config_writer, self.path, dumps(self.to_json_dict()))

    async def run(self) -> None:
        await asyncio.sleep(CHECK_INTERVAL)
        await repeat(self.deliver_due, CHECK_INTERVAL, ERROR_BACKOFF, "delivering delayed messages")

    def deliver_due(self) -> int:
        """One pass over every level; returns how many messages were delivered."""
        delivered = 0
        for level in range(1, len(self.app.delay_levels_ms) + 1):
            delivered += self._deliver_level(level)
        self.delivered += delivered
        return delivered

    def _deliver_level(self, level: int) -> int:
        store = self.app.store
        queue_id = level - 1
        offset = self.offsets.get(level, 0)
        if store.get_max_offset_in_queue(SCHEDULE_TOPIC, queue_id) <= offset:
            return 0
        delay_ms = self.app.delay_levels_ms[level - 1]
        now = self.app.clock.now_ms()
        delivered = 0
        while True:
            result = store.get_messages(
                SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, queue_id, offset, BATCH, None
            )
            if result.status.name != "FOUND":
                if result.next_begin_offset != offset and result.status.name in (
                    "OFFSET_TOO_SMALL",
                    "OFFSET_OVERFLOW_BADLY",
                    "MESSAGE_WAS_REMOVING",
                    "OFFSET_FOUND_NULL",
                ):
                    self.offsets[level] = result.next_begin_offset
                return delivered
            for i, buf in enumerate(result.buffers):
                msg = decode_record(buf, decompress=False)
                queue_offset = result.queue_offsets[i] if i < len(result.queue_offsets) else msg.queue_offset
                deliver_at = msg.store_timestamp + delay_ms
                if deliver_at > now + delay_ms:
                    deliver_at = now  # the clock moved back: deliver rather than wait forever
                if deliver_at > now:
                    self.offsets[level] = queue_offset
                    return delivered
                try:
                    self._deliver(msg)
                except StoreBusy:
                    raise
                except Exception as exc:  # PoisonMessage, or anything this message makes the code raise
                    self.skipped += 1
                    log.warning(
                        "skipping delayed message %s (level %d, queue offset %d): %s",
                        msg.offset_msg_id,
                        level,
                        queue_offset,
                        exc if isinstance(exc, PoisonMessage) else repr(exc),
                    )
                else:
                    delivered += 1
                self.offsets[level] = queue_offset + 1
            if result.next_begin_offset <= offset:
                return delivered  # no progress possible now; never spin
            offset = result.next_begin_offset
            self.offsets[level] = offset

    def _deliver(self, msg: Any) -> None:
        props: dict[str, str] = msg.properties
        real_topic = props.get(P.REAL_TOPIC)
        if not real_topic or real_topic == TRANS_HALF_TOPIC:
            raise PoisonMessage("no deliverable real topic")
        problem = topic_problem(real_topic)
        if problem is not None:
            raise PoisonMessage(f"real topic {real_topic[:64]!r}...: {problem}")
        try:
            real_queue = parse_int(props.get(P.REAL_QID, "0"))
        except ValueError:
            raise PoisonMessage(f"REAL_QID {props.get(P.REAL_QID, '')[:32]!r} is not a number") from None
        if not 0 <= real_queue <= INT_MAX:
            raise PoisonMessage(f"REAL_QID {real_queue} is not a queue id")
        result = put_again(self.app.store, msg, real_topic, real_queue, props)
        if result.status in _POISON:
            raise PoisonMessage(f"the store refused it: {result.status.name} {result.remark or ''}")
        if not result.ok:
            raise StoreBusy(f"re-putting delayed message to {real_topic} failed: {result.status.name}")
