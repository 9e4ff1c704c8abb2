"""ConsumeQueueTable: every consume queue of the store, by (topic, queue id), created on first use.

Loading walks `consumequeue/<topic>/<queue id>/`; directories that are not a queue id are ignored.
The flusher thread iterates `snapshot()` while the writer may add queues, so the dict is replaced, never
mutated in place (copy on write; queues are created rarely).
"""

from __future__ import annotations

import os

from orbitmq.store.consume_queue import ConsumeQueue
from orbitmq.store.paths import child_dir


class ConsumeQueueTable:
    def __init__(self, root_dir: str, file_size: int) -> None:
        self.root_dir = root_dir
        self.file_size = file_size
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}

    def load(self) -> None:
        if not os.path.isdir(self.root_dir):
            return
        queues: dict[tuple[str, int], ConsumeQueue] = {}
        for topic in sorted(os.listdir(self.root_dir)):
            topic_dir = os.path.join(self.root_dir, topic)
            if not os.path.isdir(topic_dir):
                continue
            for name in sorted(os.listdir(topic_dir)):
                try:
                    queue_id = int(name)
                except ValueError:
                    continue
                cq = ConsumeQueue(self.root_dir, topic, queue_id, self.file_size)
                cq.load()
                queues[(topic, queue_id)] = cq
        self._queues = queues

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._queues.get((topic, queue_id))

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            cq = ConsumeQueue(self.root_dir, topic, queue_id, self.file_size)
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
            cq.destroy()
        try:
            os.rmdir(topic_dir)
        except OSError:
            pass

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
