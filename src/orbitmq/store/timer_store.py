"""TimerStore: the timer log, the wheel and their checkpoint (config/timercheck) kept consistent.

The checkpoint says how far the timer topic's queue was read into the log (enqueue offset), up to which
slot time everything was delivered (dequeue ms) and the log length then. At open, log records written
after it are re-linked into their slots where the wheel missed them (a kill between the two writes).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from orbitmq.store.timer_log import NO_PREV, RECORD_SIZE, TimerLog, TimerRecord
from orbitmq.store.timer_wheel import TimerWheel


@dataclass(frozen=True, slots=True)
class TimerSave:
    """A checkpoint to write, and the (log length, pending, enqueue offset) it makes durable."""

    checkpoint: dict[str, int]
    state: tuple[int, int, int]


@dataclass(slots=True)
class TimerCheckpoint:
    enqueue_offset: int = 0
    """Next offset of the timer topic's queue to put into the log."""
    dequeue_ms: int = -1
    """Every slot before this time was delivered (-1: nothing scanned yet)."""
    log_length: int = 0
    pending: int = 0
    """Records in slots not scanned yet (what a compaction keeps)."""
    slots: int = 0
    precision_ms: int = 0


class TimerStore:
    def __init__(self, root: str, checkpoint_path: str, *, slots: int, precision_ms: int) -> None:
        self.checkpoint_path = checkpoint_path
        path = os.path.join(root, "timerlog", "timerlog")
        interrupted = os.path.exists(path + ".old")
        if interrupted:  # a kill during a rewrite: the old log is whole, the new one is not
            os.replace(path + ".old", path)
        self.log = TimerLog(path)
        self.wheel = TimerWheel(os.path.join(root, "timerwheel"), slots, precision_ms)
        self.checkpoint = self._read_checkpoint()
        self.recovered = 0  # records re-linked at open
        # (log length, pending, enqueue offset) at the last save: while they stay, only the scan position
        # moved, and a periodic save is skipped (see `prepare_save`).
        self._saved_state: tuple[int, int, int] | None = None
        self._save_lock = threading.Lock()  # a save on a worker thread and the one at close, in turn
        geometry = (self.checkpoint.slots, self.checkpoint.precision_ms) == (slots, precision_ms)
        if self.wheel.rebuilt or not geometry or interrupted:
            self._rebuild()
        else:
            self._relink(self.checkpoint.log_length)
        self.checkpoint.slots, self.checkpoint.precision_ms = slots, precision_ms

    def _read_checkpoint(self) -> TimerCheckpoint:
        try:
            with open(self.checkpoint_path, encoding="utf-8") as f:
                data = json.load(f)
            return TimerCheckpoint(**{k: int(v) for k, v in data.items() if k in TimerCheckpoint.__slots__})
        except FileNotFoundError:
            return TimerCheckpoint()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{self.checkpoint_path} is not a timer checkpoint: {exc}") from None

    def _rebuild(self) -> None:
        """A new wheel (first start, or another slot count / precision): every record of the log whose slot
        was not delivered yet is linked again, in log order; the queue offsets it holds count as read."""
        if not self.wheel.rebuilt:  # (a new file is zeros already)
            self.wheel.clear()
        self.wheel.rebuilt = False
        cp = self.checkpoint
        dequeue = cp.dequeue_ms
        cp.pending = 0
        path = self.log.path
        self.log.close()
        os.replace(path, path + ".old")  # streamed from, so no record is held in memory
        old, self.log = TimerLog(path + ".old"), TimerLog(path)
        try:
            for _, rec in old.scan(0):
                cp.enqueue_offset = max(cp.enqueue_offset, rec.queue_offset + 1)
                if rec.slot_ms >= dequeue:
                    self.add(rec.slot_ms, rec.phy_offset, rec.size, rec.magic, rec.queue_offset)
                    self.recovered += 1
        finally:
            old.close()
        os.remove(path + ".old")

    def _relink(self, start: int) -> None:
        cp = self.checkpoint
        for pos, rec in self.log.scan(min(start, self.log.length)):
            cp.enqueue_offset = max(cp.enqueue_offset, rec.queue_offset + 1)
            slot = self.wheel.get(rec.slot_ms)
            if slot.num and slot.last >= pos:
                continue  # the wheel has it
            if (slot.num and slot.last == rec.prev) or (not slot.num and rec.prev == NO_PREV):
                first = slot.first if slot.num else pos
                self.wheel.put(rec.slot_ms, first, pos, slot.num + 1)
                self.recovered += 1
                cp.pending += 1

    def add(self, slot_ms: int, phy_offset: int, size: int, magic: int, queue_offset: int) -> int:
        """Puts one record in the slot of `slot_ms` (log first, then the wheel); its log position."""
        slot = self.wheel.get(slot_ms)
        prev = slot.last if slot.num else NO_PREV
        pos = self.log.append(TimerRecord(prev, slot_ms, phy_offset, size, magic, queue_offset))
        self.wheel.put(slot_ms, slot.first if slot.num else pos, pos, slot.num + 1)
        self.checkpoint.pending += 1
        return pos

    def scanned(self, slot_ms: int) -> None:
        """The slot of `slot_ms` was delivered: its records are no longer pending."""
        self.checkpoint.pending = max(0, self.checkpoint.pending - self.wheel.get(slot_ms).num)

    def compact(self, min_bytes: int) -> bool:
        """Rewrites the log without delivered records once it is over `min_bytes` and they are most of it
        (each record is copied a bounded number of times); whether it did. The checkpoint is saved after."""
        live = self.checkpoint.pending * RECORD_SIZE
        if self.log.length <= min_bytes or self.log.length <= 4 * live:
            return False
        self._rebuild()
        self.save()
        return True

    def entries(self, slot_ms: int) -> Iterator[TimerRecord]:
        """The slot's records, newest first (the chain runs backwards)."""
        slot = self.wheel.get(slot_ms)
        pos, left = slot.last, slot.num
        while left > 0 and pos != NO_PREV:
            rec = self.log.read(pos)
            if rec.slot_ms != slot_ms:
                return
            yield rec
            pos, left = rec.prev, left - 1

    def save(self) -> None:
        """Writes the checkpoint now: the log and the wheel synced first, then the file, synced before it
        replaces the old one (a power cut leaves one whole checkpoint or the other, never a torn one)."""
        self.write_save(self.prepare_save(force=True))

    def prepare_save(self, *, force: bool = False) -> TimerSave | None:
        """What a save writes, taken now (on the thread that changes the store): `write_save` may then run
        on another thread while appends go on, since the checkpoint claims only what was written before.

        None, unless `force`, when nothing but the scan position moved since the last save (no timer
        added, delivered or recalled): losing that position only rescans empty slots (thousands a pass),
        and an idle timer service must not sync every second."""
        cp = self.checkpoint
        cp.log_length = self.log.length
        state = (self.log.length, cp.pending, cp.enqueue_offset)
        if state == self._saved_state and not force:
            return None
        return TimerSave(asdict(cp), state)

    def write_save(self, save: TimerSave | None) -> None:
        """Writes a prepared save, if any; one at a time, in order."""
        if save is None:
            return
        with self._save_lock:
            self.log.flush()
            self.wheel.flush()
            tmp = self.checkpoint_path + ".tmp"
            os.makedirs(os.path.dirname(self.checkpoint_path), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(save.checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.checkpoint_path)
            self._saved_state = save.state

    def close(self) -> None:
        self.save()
        self.log.close()
        self.wheel.close()


__all__ = ["RECORD_SIZE", "TimerCheckpoint", "TimerSave", "TimerStore"]
