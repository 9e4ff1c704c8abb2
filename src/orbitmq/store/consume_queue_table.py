"""ConsumeQueueTable: every consume queue of the store, by (topic, queue id), created on first use.

Loading walks `consumequeue/<topic>/<queue id>/`; directories that are not a queue id are ignored.
The flusher thread iterates `snapshot()` while the writer may add queues, so the dict is replaced, never
mutated in place (copy on write; queues are created rarely).

Removing a topic (DELETE_TOPIC) must not unlink its files on the caller's thread (the event loop: up to
tens of ms per file on a busy disk). Its queues are closed and marked destroyed, its directory renamed to
`.deleted-<topic>-<n>` (one rename; a queue of the same name created next starts fresh) and removed by
one background thread. A leftover from a crash is removed at the next load (a name with a dot is never a
topic).
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import shutil
import sys
import threading
from collections.abc import Callable
from typing import Final

from orbitmq.store.consume_queue import ConsumeQueue
from orbitmq.store.paths import child_dir

log: Final = logging.getLogger(__name__)

DELETED_PREFIX: Final = ".deleted-"


class _Remover:
    """One daemon thread removing renamed-away directories, in order."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._pending = 0
        self._idle = threading.Condition(self._lock)

    def remove(self, path: str) -> None:
        with self._lock:
            self._pending += 1
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="orbitmq-store-remover", daemon=True)
                self._worker.start()
        self._queue.put(path)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while True:
            path = self._queue.get()
            try:
                shutil.rmtree(path)
            except FileNotFoundError:
                pass
            except OSError as exc:  # left for the next load
                log.warning("removing deleted topic files %s failed: %s", path, exc)
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()


REMOVER: Final = _Remover()
_tombstones: Final = itertools.count()


class ConsumeQueueTable:
    def __init__(self, root_dir: str, file_size: int) -> None:
        self.root_dir = root_dir
        self.file_size = file_size
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}
        # Given to every queue's files (MappedFileQueue.space_guard): the store's disk-space watch.
        self.space_guard: Callable[[int, bool], None] | None = None

    def load(self) -> None:
        if not os.path.isdir(self.root_dir):
            return
        queues: dict[tuple[str, int], ConsumeQueue] = {}
        for entry in sorted(os.listdir(self.root_dir)):
            # Interned: the broker's requests carry interned topic names (message/validation), and a
            # lookup that matches its key by identity does not read the key (cold with many topics).
            topic = sys.intern(entry)
            topic_dir = os.path.join(self.root_dir, topic)
            if topic.startswith(DELETED_PREFIX):  # a deleted topic whose removal a crash interrupted
                shutil.rmtree(topic_dir, ignore_errors=True)
                continue
            if not os.path.isdir(topic_dir):
                continue
            for name in sorted(os.listdir(topic_dir)):
                try:
                    queue_id = int(name)
                except ValueError:
                    continue
                cq = ConsumeQueue(self.root_dir, topic, queue_id, self.file_size)
                cq.files.space_guard = self.space_guard
                cq.load()
                queues[(topic, queue_id)] = cq
        self._queues = queues

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            cq = ConsumeQueue(self.root_dir, topic, queue_id, self.file_size)
            cq.files.space_guard = self.space_guard
            self._queues = {**self._queues, (topic, queue_id): cq}
        return cq

    def snapshot(self) -> list[ConsumeQueue]:
        return list(self._queues.values())

    def topics(self) -> set[str]:
        return {topic for topic, _ in self._queues}

    def queues_of(self, topic: str) -> list[ConsumeQueue]:
        return [cq for (t, _), cq in self._queues.items() if t == topic]

    def remove_topic(self, topic: str) -> None:
        topic_dir = child_dir(self.root_dir, topic)  # before anything is removed
        removed = self.queues_of(topic)
        self._queues = {k: v for k, v in self._queues.items() if k[0] != topic}
        for cq in removed:
            cq.destroyed = True  # first: a flush round holding it skips it quietly
            cq.close()
        if not os.path.isdir(topic_dir):
            return
        tomb = os.path.join(self.root_dir, f"{DELETED_PREFIX}{topic}-{os.getpid()}-{next(_tombstones)}")
        try:
            os.rename(topic_dir, tomb)
        except OSError as exc:
            log.warning("cannot move deleted topic %s aside (%s); removing it in place", topic, exc)
            shutil.rmtree(topic_dir, ignore_errors=True)
            return
        REMOVER.remove(tomb)

    def remove_queue(self, topic: str, queue_id: int) -> None:
        """Destroy one queue's files (and its topic directory when that was the last queue)."""
        topic_dir = child_dir(self.root_dir, topic)
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            return
        self._queues = {k: v for k, v in self._queues.items() if k != (topic, queue_id)}
        cq.destroy()
        try:
            os.rmdir(topic_dir)  # fails (kept) while other queues of the topic remain
        except OSError:
            pass

    def max_physic_offset(self) -> int:
        """The end of the furthest record any queue points at (-1 if none)."""
        return max((cq.max_physic_offset for cq in self._queues.values()), default=-1)

    def close(self) -> None:
        for cq in self._queues.values():
            cq.close()
