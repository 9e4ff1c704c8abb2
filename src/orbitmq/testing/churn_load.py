"""The churn run's clients: push consumers of many groups joining and leaving, short-lived producers,
and one consumer that never acknowledges; every acknowledged send and every consumed message recorded.

Each client has its own ClientInstance (its own connections and client id), as separate processes would,
so every join and leave is a real registration, rebalance notification and connection on the broker.
Group i subscribes topic i mod topics and consumes from the first offset, so a group that had no member
while messages came still owes them; `owed()` is what a group has not consumed of its topic's acks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
from dataclasses import dataclass, field

from orbitmq.client.aio import (
    ClientConfig,
    ClientInstance,
    ConsumeFromWhere,
    ConsumeStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendStatus,
)
from orbitmq.common.errors import OrbitError

log = logging.getLogger("orbitmq.churn")

SLOW_GROUP = "churn-slow"


@dataclass
class Shape:
    """How much load: names, counts and rates (all bounded)."""

    topics: int = 20
    groups: int = 100
    queues: int = 2
    rate: float = 20.0  # acknowledged sends per second, all producers together
    max_members: int = 3  # consumers per group at most
    max_producers: int = 4
    producer_life: tuple[float, float] = (5.0, 20.0)  # seconds

    def __post_init__(self) -> None:
        for name in ("topics", "groups", "queues", "max_members", "max_producers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 0 < self.rate <= 10_000:
            raise ValueError(f"rate must be in (0, 10000] messages per second, not {self.rate}")

    def topic(self, i: int) -> str:
        return f"ChurnTopic{i:02d}"

    def group(self, i: int) -> str:
        return f"churn-group-{i:03d}"

    def topic_of(self, group_index: int) -> str:
        return self.topic(group_index % self.topics)


@dataclass
class Counts:
    sent: int = 0
    send_failures: int = 0
    consumer_joins: int = 0
    consumer_leaves: int = 0
    producer_starts: int = 0
    client_errors: list[str] = field(default_factory=list)
    slow_held: int = 0  # messages the slow consumer holds without acknowledging


class Load:
    def __init__(self, namesrv_addr: str, broker_addr: str, shape: Shape, rng: random.Random) -> None:
        self.namesrv_addr = namesrv_addr
        self.broker_addr = broker_addr
        self.shape = shape
        self.rng = rng
        self.acked: dict[str, set[str]] = {shape.topic(i): set() for i in range(shape.topics)}
        self.consumed: dict[str, set[str]] = {shape.group(i): set() for i in range(shape.groups)}
        self.members: dict[str, list[PushConsumer]] = {g: [] for g in self.consumed}
        self.counts = Counts()
        self.release_slow = asyncio.Event()
        self._slow: PushConsumer | None = None
        self._names = itertools.count(1)
        self._producers: set[asyncio.Task[None]] = set()

    def _config(self, role: str) -> ClientConfig:
        return ClientConfig(
            namesrv_addrs=[self.namesrv_addr],
            instance_name=f"churn-{role}-{next(self._names)}",
            client_ip="127.0.0.1",
            heartbeat_interval=5.0,
            rebalance_interval=10.0,
            poll_namesrv_interval=10.0,
        )

    def _error(self, what: str, exc: BaseException) -> None:
        self.counts.client_errors.append(f"{what}: {type(exc).__name__}: {exc}")
        log.warning("%s: %s", what, exc)

    async def create_topics(self) -> None:
        instance = ClientInstance(self._config("admin"))
        try:
            for i in range(self.shape.topics):
                q = self.shape.queues
                topic = self.shape.topic(i)
                await instance.api.create_topic(
                    self.broker_addr, topic, read_queue_nums=q, write_queue_nums=q
                )
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            for i in range(self.shape.topics):
                while (await instance.api.get_topic_route(self.shape.topic(i))) is None:
                    if loop.time() > deadline:
                        raise TimeoutError(f"no route for {self.shape.topic(i)} after 30 s")
                    await asyncio.sleep(0.2)
        finally:
            await instance.shutdown()

    # ---- consumers ----------------------------------------------------------------------------
    async def join(self, group: str) -> None:
        index = int(group.rsplit("-", 1)[1])
        seen = self.consumed[group]

        async def listener(msgs: list[MessageExt], context: object) -> ConsumeStatus:
            for msg in msgs:
                seen.add(msg.body.split(b" ", 1)[0].decode())
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = PushConsumer(
            group,
            config=self._config("consumer"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            consume_concurrency=4,
        )
        consumer.subscribe(self.shape.topic_of(index))
        consumer.register_listener(listener)
        try:
            await consumer.start()
        except (OrbitError, OSError, TimeoutError) as exc:
            self._error(f"{group} join", exc)
            with contextlib.suppress(Exception):
                await consumer.shutdown()
            return
        # A member only once started: a leave in the same step must not shut down a consumer mid-start.
        self.members[group].append(consumer)
        self.counts.consumer_joins += 1

    async def leave(self, group: str) -> None:
        members = self.members[group]
        if not members:
            return
        consumer = members.pop(self.rng.randrange(len(members)))
        try:
            await consumer.shutdown()
        except (OrbitError, OSError, TimeoutError) as exc:
            self._error(f"{group} leave", exc)
        self.counts.consumer_leaves += 1

    async def start_slow(self) -> None:
        """A consumer that takes messages and never acknowledges them (until the run ends)."""
        release = self.release_slow

        async def listener(msgs: list[MessageExt], context: object) -> ConsumeStatus:
            self.counts.slow_held += len(msgs)
            await release.wait()
            return ConsumeStatus.CONSUME_SUCCESS

        self._slow = PushConsumer(
            SLOW_GROUP,
            config=self._config("slow"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            consume_concurrency=2,
            pull_threshold_for_queue=50,
        )
        self._slow.subscribe(self.shape.topic(0))
        self._slow.register_listener(listener)
        await self._slow.start()

    # ---- producers ----------------------------------------------------------------------------
    def start_producer(self, until: float) -> None:
        """A producer that lives a few seconds (bounded by `until`, a loop time), then leaves."""
        low, high = self.shape.producer_life
        loop = asyncio.get_running_loop()
        end = min(loop.time() + self.rng.uniform(low, high), until)
        task = loop.create_task(self._produce(next(self._names), end))
        self._producers.add(task)
        task.add_done_callback(self._producers.discard)
        self.counts.producer_starts += 1

    @property
    def producers(self) -> int:
        return len(self._producers)

    async def _produce(self, n: int, end: float) -> None:
        loop = asyncio.get_running_loop()
        producer = Producer(f"churn-producer-{n % 10}", config=self._config("producer"), send_timeout=5.0)
        try:
            await producer.start()
            seq = 0
            while loop.time() < end:
                topic = self.shape.topic(self.rng.randrange(self.shape.topics))
                key = f"p{n}-{seq}"
                seq += 1
                body = f"{key} ".encode() + b"x" * self.rng.randrange(100, 1000)
                try:
                    result = await producer.send(Message.create(topic, body, keys=key))
                except (OrbitError, OSError, TimeoutError) as exc:
                    self.counts.send_failures += 1
                    self._error(f"send {key}", exc)
                else:
                    if result.status is SendStatus.SEND_OK:
                        self.acked[topic].add(key)
                        self.counts.sent += 1
                    else:
                        self.counts.send_failures += 1
                # The rate is shared: each of the running producers sends its part of it.
                await asyncio.sleep(max(len(self._producers), 1) / self.shape.rate)
        except (OrbitError, OSError, TimeoutError) as exc:
            self._error(f"producer {n}", exc)
        finally:
            with contextlib.suppress(Exception):
                await producer.shutdown()

    async def stop_producers(self) -> None:
        tasks = list(self._producers)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # ---- the end ------------------------------------------------------------------------------
    def owed(self) -> dict[str, int]:
        """Per group: acknowledged messages of its topic it has not consumed."""
        out: dict[str, int] = {}
        for i in range(self.shape.groups):
            group = self.shape.group(i)
            missing = len(self.acked[self.shape.topic_of(i)] - self.consumed[group])
            if missing:
                out[group] = missing
        return out

    async def close(self) -> None:
        self.release_slow.set()
        await self.stop_producers()
        consumers = [c for members in self.members.values() for c in members]
        if self._slow is not None:
            consumers.append(self._slow)
        for members in self.members.values():
            members.clear()
        for consumer in consumers:
            try:
                await asyncio.wait_for(consumer.shutdown(), 30)
            except (OrbitError, OSError, TimeoutError) as exc:
                self._error("shutdown", exc)
