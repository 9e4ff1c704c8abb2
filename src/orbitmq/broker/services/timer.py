"""TimerMessageService: messages delivered at any time up to timerMaxDelaySec ahead (RocketMQ 5's timer).

The send path parks a timer message in rmq_sys_wheel_timer (real topic and queue kept, TIMER_OUT_MS set);
this service reads that queue into the timer log and wheel (orbitmq.store.timer_store) and, as each slot's
time passes, puts its messages back to their real topics, skipping recalled ones. Only a master runs it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from array import array
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Final

from orbitmq.broker.processors.bad_request import BadRequest
from orbitmq.broker.services.reput import put_again, repeat
from orbitmq.message import properties as P
from orbitmq.message.hosts import pack_address
from orbitmq.message.model import MessageExt
from orbitmq.message.property_string import encode_properties
from orbitmq.message.record_decode import decode_record
from orbitmq.message.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, transaction_type
from orbitmq.protocol.codes import ResponseCode
from orbitmq.store.results import PutMessageStatus
from orbitmq.store.store_message import StoreMessage
from orbitmq.store.timer_log import MAGIC_DELETE, MAGIC_NORMAL, MAGIC_ROLL
from orbitmq.store.timer_names import (
    START_DELIVER_TIME,
    TIMER_DEL_UNIQKEY,
    TIMER_DELAY_MS,
    TIMER_DELAY_SEC,
    TIMER_DELIVER_MS,
    TIMER_DEQUEUE_MS,
    TIMER_ENQUEUE_MS,
    TIMER_OUT_MS,
    TIMER_TOPIC,
    decode_recall_handle,
    delete_key,
    out_ms,
)
from orbitmq.store.timer_store import TimerStore

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext

log = logging.getLogger("orbitmq.broker")

_REQUESTS: Final = (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS, START_DELIVER_TIME)
CHECK_INTERVAL: Final = 0.05
ERROR_BACKOFF: Final = 1.0
ENQUEUE_BATCH: Final = 1024
ENQUEUE_BATCHES_PER_STEP: Final = 8  # a burst of timers is read in over several steps: the loop breathes
SCAN_SLOTS_PER_PASS: Final = 4096  # empty slots skipped per pass after a long stop, so the loop breathes


class TimerRefused(BadRequest):
    """The timer message cannot be taken: answered MESSAGE_ILLEGAL with the reason (RocketMQ's
    WHEEL_TIMER_MSG_ILLEGAL / WHEEL_TIMER_NOT_ENABLE)."""

    def __init__(self, reason: str) -> None:
        super().__init__(ResponseCode.MESSAGE_ILLEGAL, reason)


class TimerMessageService:
    def __init__(self, app: BrokerContext) -> None:
        self.app = app
        self.store: TimerStore | None = None
        self.enqueued = 0
        self.delivered = 0
        self.recalled = 0
        self._flushed_ms = 0
        self._slot_done = (-1, 0)  # (slot time, records delivered) of a slot a failed put interrupted

    # ------------------------------------------------------------------ the send path
    def redirect(self, topic: str, queue_id: int, sys_flag: int, props: dict[str, str]) -> tuple[str, int]:
        """A message asking for a delivery time goes to the timer topic; a delay level wins over it."""
        if transaction_type(sys_flag) not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
            return topic, queue_id
        if topic == TIMER_TOPIC or TIMER_OUT_MS in props:
            return topic, queue_id
        asked = [key for key in _REQUESTS if key in props]
        if not asked:
            return topic, queue_id
        delay = props.get(P.DELAY, "")
        if delay.strip().lstrip("-").isdigit() and int(delay) > 0:
            for key in asked:
                props.pop(key)
            return topic, queue_id
        config = self.app.config
        if not config.timer_wheel_enable:
            raise TimerRefused("accurate timer message is not enabled, timerWheelEnable is false")
        now = self.app.clock.now_ms()
        try:
            if TIMER_DELAY_SEC in props:
                deliver = now + int(props[TIMER_DELAY_SEC]) * 1000
            elif TIMER_DELAY_MS in props:
                deliver = now + int(props[TIMER_DELAY_MS])
            else:
                deliver = int(props.get(TIMER_DELIVER_MS) or props[START_DELIVER_TIME])
        except (ValueError, KeyError):
            raise TimerRefused(f"the timer property {asked[0]} is not a number") from None
        if deliver <= now:
            if TIMER_DEL_UNIQKEY in props:
                raise TimerRefused("the recalled message's time has passed")
            return topic, queue_id  # due already: an ordinary message
        if deliver - now > config.timer_max_delay_sec * 1000:
            most = config.timer_max_delay_sec
            raise TimerRefused(f"the delivery time is more than timerMaxDelaySec ({most} s) ahead")
        props[TIMER_OUT_MS] = str(out_ms(deliver, config.timer_precision_ms))
        props[P.REAL_TOPIC] = topic
        props[P.REAL_QID] = str(queue_id)
        return TIMER_TOPIC, 0

    def recall(self, topic: str, handle: str) -> str:
        """Puts a recall for the pending message of `handle`; its message id. ValueError when refused."""
        config = self.app.config
        handle_topic, broker, timestamp, message_id = decode_recall_handle(handle)
        if handle_topic != topic:
            raise ValueError("recall failed, topic not match")
        if broker != config.broker_name:
            raise ValueError("recall failed, broker service not available")
        left = timestamp - self.app.clock.now_ms()
        if left <= 0 or left >= config.timer_max_delay_sec * 1000:
            raise ValueError("recall failed, timestamp invalid")
        props = {
            TIMER_DEL_UNIQKEY: delete_key(topic, message_id),
            P.UNIQ_KEY: message_id,
            TIMER_DELIVER_MS: str(timestamp),
        }
        stored_topic, queue_id = self.redirect(topic, 0, TRANSACTION_NOT_TYPE, props)
        result = self.app.store.put_message(
            StoreMessage(
                topic=stored_topic,
                queue_id=queue_id,
                flag=0,
                body=b"0",
                properties=encode_properties(props),
                sys_flag=0,
                born_timestamp=self.app.clock.now_ms(),
                born_host=pack_address(f"{config.broker_ip1}:0"),
                reconsume_times=0,
            )
        )
        if not result.ok:
            raise ValueError(f"recall failed, the store answered {result.status.name}")
        return message_id

    # ------------------------------------------------------------------ lifecycle
    def load(self) -> None:
        config = self.app.config
        precision = config.timer_precision_ms
        # two max delays of slots: a pending timer's slot is never reused before it is scanned
        slots = max(2, 2 * config.timer_max_delay_sec * 1000 // precision + 2)
        root = config.store_path_root_dir
        self.store = TimerStore(
            root, os.path.join(config.config_dir, "timercheck"), slots=slots, precision_ms=precision
        )
        cp = self.store.checkpoint
        if cp.dequeue_ms < 0:
            cp.dequeue_ms = self.app.clock.now_ms() // precision * precision
        if self.store.recovered:
            log.info("timer wheel: %d timer log records re-linked at start", self.store.recovered)

    def persist(self) -> None:
        if self.store is not None:
            self.store.save()

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    async def run(self) -> None:
        await repeat(self.step, CHECK_INTERVAL, ERROR_BACKOFF, "the timer wheel")

    def step(self) -> Awaitable[None] | None:
        """Enqueues what came, delivers what is due, and checkpoints (or compacts the log) every
        timerFlushIntervalMs; the checkpoint's syncs run on a worker thread (returned to be awaited), so
        the event loop never waits on the disk for them."""
        self.enqueue()
        self.dequeue()
        now = self.app.clock.now_ms()
        if now - self._flushed_ms >= self.app.config.timer_flush_interval_ms:
            self._flushed_ms = now
            store = self.store
            assert store is not None
            if not store.compact(self.app.config.mapped_file_size_timer_log):
                return asyncio.to_thread(store.write_save, store.prepare_save())
        return None

    # ------------------------------------------------------------------ timer topic -> wheel
    def enqueue(self) -> int:
        """Reads new timer-topic messages into the log and wheel; how many."""
        assert self.store is not None
        store, cp = self.app.store, self.store.checkpoint
        done = 0
        for _ in range(ENQUEUE_BATCHES_PER_STEP):
            entries = store.read_consume_queue(TIMER_TOPIC, 0, cp.enqueue_offset, ENQUEUE_BATCH)
            if not entries:
                low = store.get_min_offset_in_queue(TIMER_TOPIC, 0)
                if cp.enqueue_offset < low:  # the commit log lost them (retention): nothing to read
                    cp.enqueue_offset = low
                    continue
                return done
            for queue_offset, phy, size, _tags in entries:
                msg = self._read(phy, size)
                if msg is not None:
                    magic = MAGIC_DELETE if TIMER_DEL_UNIQKEY in msg.properties else MAGIC_NORMAL
                    self._place(_int(msg.properties.get(TIMER_OUT_MS)), phy, size, magic, queue_offset)
                    done += 1
                cp.enqueue_offset = queue_offset + 1
            self.enqueued += len(entries)
        return done

    def _place(self, out: int, phy: int, size: int, magic: int, queue_offset: int) -> None:
        assert self.store is not None
        wheel, scan = self.store.wheel, self.store.checkpoint.dequeue_ms
        slot = max(out, scan)  # a slot already scanned: the next one to scan
        last = scan + wheel.window_ms - 2 * wheel.precision_ms
        if slot > last:  # beyond the wheel (after a long stop): put again when that slot comes
            slot, magic = last, magic | MAGIC_ROLL
        self.store.add(slot // wheel.precision_ms * wheel.precision_ms, phy, size, magic, queue_offset)

    # ------------------------------------------------------------------ wheel -> real topics
    def dequeue(self) -> int:
        """Delivers every slot whose time has ended; how many messages."""
        assert self.store is not None
        cp, precision = self.store.checkpoint, self.store.wheel.precision_ms
        now = self.app.clock.now_ms()
        delivered = 0
        for _ in range(SCAN_SLOTS_PER_PASS):
            slot = cp.dequeue_ms
            if now < slot + precision:
                break
            count = self._deliver_slot(slot)
            self.store.scanned(slot)
            cp.dequeue_ms = slot + precision
            delivered += count  # (made durable by the next periodic save, within timerFlushIntervalMs)
        self.delivered += delivered
        return delivered

    def _deliver_slot(self, slot: int) -> int:
        assert self.store is not None
        deletes: set[str] = set()
        positions = array("q")  # the slot's normal records, compactly: oldest delivered first
        sizes = array("i")
        for rec in self.store.entries(slot):
            if rec.magic & MAGIC_DELETE:
                msg = self._read(rec.phy_offset, rec.size)
                if msg is not None:
                    deletes.add(msg.properties.get(TIMER_DEL_UNIQKEY, ""))
            else:
                positions.append(rec.phy_offset)
                sizes.append(rec.size)
        skip = self._slot_done[1] if self._slot_done[0] == slot else 0
        count = 0
        for index in range(len(positions) - 1, -1, -1):
            if skip:
                skip -= 1
                continue
            msg = self._read(positions[index], sizes[index])
            if msg is not None:
                count += self._deliver_one(slot, msg, positions[index], sizes[index], deletes)
            self._slot_done = (slot, len(positions) - index)
        self._slot_done = (-1, 0)
        return count

    def _deliver_one(self, slot: int, msg: MessageExt, phy: int, size: int, deletes: set[str]) -> int:
        props = dict(msg.properties)
        real_topic, uniq = props.get(P.REAL_TOPIC, ""), props.get(P.UNIQ_KEY, "")
        if delete_key(real_topic, uniq) in deletes:
            self.recalled += 1
            return 0
        out = _int(props.get(TIMER_OUT_MS))
        if out > slot:  # a rolled record: its own slot is still ahead
            self._place(out, phy, size, MAGIC_NORMAL, msg.queue_offset)
            return 0
        props.pop(P.REAL_TOPIC, None)
        real_queue = props.pop(P.REAL_QID, "0")
        props[TIMER_ENQUEUE_MS] = str(msg.store_timestamp)
        props[TIMER_DEQUEUE_MS] = str(self.app.clock.now_ms())
        if not real_topic or not real_queue.isdigit():
            log.warning("skipping timer message %s: no real topic or queue", msg.offset_msg_id)
            return 0
        result = put_again(self.app.store, msg, real_topic, int(real_queue), props)
        if result.status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            log.warning("skipping timer message %s: %s", msg.offset_msg_id, result.status.name)
            return 0
        if not result.ok:
            raise RuntimeError(f"putting timer message back to {real_topic} failed: {result.status.name}")
        return 1

    def _read(self, phy: int, size: int) -> MessageExt | None:
        view = self.app.store.select_one_message_by_offset(phy, size)
        if view is None:
            return None
        return decode_record(view, decompress=False)


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0
