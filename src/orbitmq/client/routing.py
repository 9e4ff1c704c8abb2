"""From a topic route to queue lists (fact sheet 4.2 client rules) and the producer's queue choice (7.6).

- `publish_queues(route)`: writable queues of brokers that have a master, brokers sorted by name (or the
  `orderTopicConf` layout when the name server sends one).
- `subscribe_queues(route)`: readable queues of every broker.
- `TopicPublishInfo`: a producer's view of one topic: its queues and a round-robin counter.
- `select_queue(info, last_broker, fault)`: round robin, avoiding the broker of the failed attempt, and
  skipping brokers that latency fault tolerance has isolated.

Pure: no I/O. The route is any object shaped like `protocol.bodies.TopicRouteData`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from orbitmq.client.fault import FaultStrategy
from orbitmq.message.model import MessageQueue
from orbitmq.protocol.bodies_core import MASTER_ID
from orbitmq.protocol.perm import is_readable, is_writeable


def master_address(route: Any, broker_name: str) -> str | None:
    for broker in route.broker_datas:
        if broker.broker_name == broker_name:
            return _addr(broker.broker_addrs, MASTER_ID)
    return None


def _addr(addrs: dict[Any, str], broker_id: int) -> str | None:
    # Tolerate str or int keys: Java writes both forms depending on the requester's version.
    addr = addrs.get(broker_id)
    if addr is None:
        addr = addrs.get(str(broker_id))
    return addr


def publish_queues(topic: str, route: Any) -> tuple[list[MessageQueue], bool]:
    """The queues a producer may write, and whether the topic is ordered (has `orderTopicConf`)."""
    order_conf = getattr(route, "order_topic_conf", None)
    if order_conf:
        queues = []
        for entry in order_conf.split(";"):
            name, _, count = entry.partition(":")
            queues += [MessageQueue(topic, name, q) for q in range(int(count))]
        return queues, True
    queues = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not is_writeable(qd.perm):
            continue
        if master_address(route, qd.broker_name) is None:
            continue
        queues += [MessageQueue(topic, qd.broker_name, q) for q in range(qd.write_queue_nums)]
    return queues, False


def subscribe_queues(topic: str, route: Any) -> list[MessageQueue]:
    queues = []
    for qd in route.queue_datas:
        if is_readable(qd.perm):
            queues += [MessageQueue(topic, qd.broker_name, q) for q in range(qd.read_queue_nums)]
    return sorted(queues)


@dataclass(slots=True)
class TopicPublishInfo:
    topic: str
    message_queues: list[MessageQueue]
    order_topic: bool = False
    route: Any = None
    # RocketMQ's sendWhichQueue starts at a random value so that producers do not all begin at queue 0.
    counter: int = field(default_factory=lambda: random.randrange(0, 1 << 31))

    @classmethod
    def from_route(cls, topic: str, route: Any) -> TopicPublishInfo:
        queues, ordered = publish_queues(topic, route)
        return cls(topic, queues, ordered, route)

    @property
    def ok(self) -> bool:
        return bool(self.message_queues)

    def next_index(self) -> int:
        self.counter = (self.counter + 1) & 0x7FFFFFFF
        return self.counter

    def select_one(self, last_broker_name: str | None = None) -> MessageQueue:
        """Round robin; with `last_broker_name`, the next queue on another broker if there is one."""
        n = len(self.message_queues)
        if last_broker_name is not None:
            for _ in range(n):
                mq = self.message_queues[self.next_index() % n]
                if mq.broker_name != last_broker_name:
                    return mq
        return self.message_queues[self.next_index() % n]

    def write_queue_nums_of(self, broker_name: str) -> int:
        if self.route is None:
            return sum(1 for mq in self.message_queues if mq.broker_name == broker_name)
        for qd in self.route.queue_datas:
            if qd.broker_name == broker_name:
                return int(qd.write_queue_nums)
        return -1


def select_queue(info: TopicPublishInfo, last_broker_name: str | None, fault: FaultStrategy) -> MessageQueue:
    """The queue for the next send attempt (MQFaultStrategy.selectOneMessageQueue)."""
    if not fault.enabled:
        return info.select_one(last_broker_name)
    tolerance = fault.tolerance
    n = len(info.message_queues)
    # First choice: an available broker other than the one that just failed, then any available one.
    fallback: MessageQueue | None = None
    for _ in range(n):
        mq = info.message_queues[info.next_index() % n]
        if tolerance.is_available(mq.broker_name):
            if mq.broker_name != last_broker_name:
                return mq
            fallback = fallback or mq
    if fallback is not None:
        return fallback
    not_best = tolerance.pick_one_at_least()
    if not_best is not None:
        write_queues = info.write_queue_nums_of(not_best)
        if write_queues > 0:
            return MessageQueue(info.topic, not_best, info.next_index() % write_queues)
        tolerance.remove(not_best)
    return info.select_one()
