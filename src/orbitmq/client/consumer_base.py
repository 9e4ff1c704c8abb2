"""What the push and lite pull consumers share: the attributes they derive from their options and
what they open at start (client instance, offset store, rebalancer)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Self

from orbitmq.client.allocation import AllocateAveragely, AllocateStrategy
from orbitmq.client.broker_offsets import BrokerOffsetBackend
from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.client.offset_store import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from orbitmq.client.options import ClientSetup, ConsumerOptions
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.rebalance import Rebalancer
from orbitmq.client.results import ConsumeFromWhere, ConsumeType, MessageModel
from orbitmq.client.subscription import MessageSelector, Subscription, subscription_of
from orbitmq.common.clock import Clock
from orbitmq.common.errors import ClientError
from orbitmq.message.model import MessageQueue
from orbitmq.message.validation import validate_topic

# How far back CONSUME_FROM_TIMESTAMP starts when no timestamp is given (RocketMQ: half an hour).
DEFAULT_CONSUME_TIMESTAMP_AGO_MS = 30 * 60 * 1000
MIB = 1024 * 1024


class ConsumerBase(ABC):
    """What both consumers do the same way: the attributes they derive from their setup and options,
    their subscriptions, and what they open at start."""

    consume_type: ConsumeType

    group: str
    instance: ClientInstance | None
    _config: ClientConfig | None
    _own_instance: bool
    clock: Clock
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    consume_timestamp_ms: int
    allocate_strategy: AllocateStrategy
    pull_threshold_size_for_queue: int  # bytes
    _subscriptions: dict[str, Subscription]
    rebalancer: Rebalancer | None
    started: bool

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def shutdown(self) -> None: ...

    @abstractmethod
    async def do_rebalance(self) -> None: ...

    @abstractmethod
    async def persist_consumer_offset(self) -> None: ...

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def subscribe(
        self,
        topic: str,
        expression: str | MessageSelector | None = "*",
        *,
        expression_type: str | None = None,
    ) -> None:
        """Consume `topic`, messages whose tag matches `expression` (`*` or `tagA || tagB`), or that a
        SQL92 selector selects (`MessageSelector.by_sql(...)` or `expression_type="SQL92"`)."""
        validate_topic(topic)
        refused = self._subscribe_refused()
        if refused is not None:
            raise ClientError(refused)
        sub = subscription_of(
            topic, expression, sub_version=self.clock.now_ms(), expression_type=expression_type
        )
        self._subscriptions[topic] = sub
        if self.rebalancer is not None:
            self.rebalancer.subscriptions[topic] = sub
        if self.started and self.instance is not None:
            self.instance.spawn(self.instance.refresh_subscriptions(self), f"subscribe {topic}")

    def _subscribe_refused(self) -> str | None:
        """Why `subscribe` is not allowed now, or None."""
        return None

    def unsubscribe(self, topic: str) -> None:
        self._subscriptions.pop(topic, None)
        if self.rebalancer is not None:
            self.rebalancer.subscriptions.pop(topic, None)

    def subscriptions(self) -> list[Subscription]:
        return list(self._subscriptions.values())

    def update_topic_subscribe_info(self, topic: str, mqs: list[MessageQueue]) -> None:
        if self.rebalancer is not None:
            self.rebalancer.topic_queues[topic] = mqs

    def _set_up(self, setup: ClientSetup, options: ConsumerOptions) -> None:
        self.group = setup.group
        self.instance = setup.instance
        self._config = setup.config
        self._own_instance = setup.instance is None
        self.clock = setup.clock
        self.message_model = MessageModel(options.message_model)
        self.consume_from_where = ConsumeFromWhere(options.consume_from_where)
        timestamp = options.consume_timestamp_ms
        if timestamp is None:
            timestamp = setup.clock.now_ms() - DEFAULT_CONSUME_TIMESTAMP_AGO_MS
        self.consume_timestamp_ms = timestamp
        self.allocate_strategy = options.allocate_strategy or AllocateAveragely()
        self.pull_threshold_size_for_queue = options.pull_threshold_size_for_queue_mib * MIB

    async def _open(
        self,
        *,
        orderly: bool,
        offset_store_dir: Path | None,
        on_added: Callable[[MessageQueue, ProcessQueue, int], Awaitable[None]],
        on_removed: Callable[[MessageQueue, ProcessQueue], Awaitable[bool]],
    ) -> tuple[ClientInstance, OffsetStore, Rebalancer]:
        """At start: the client instance (the own one made now), the loaded offset store (the brokers'
        when clustering, a local file when broadcasting) and the group's rebalancer."""
        if self.instance is None:
            assert self._config is not None
            self.instance = ClientInstance(self._config)
        instance = self.instance
        store: OffsetStore
        if self.message_model is MessageModel.CLUSTERING:
            store = RemoteBrokerOffsetStore(self.group, BrokerOffsetBackend(instance))
        else:
            store = LocalFileOffsetStore(instance.client_id, self.group, offset_store_dir)
        await store.load()
        rebalancer = Rebalancer(
            group=self.group,
            message_model=self.message_model,
            strategy=self.allocate_strategy,
            instance=instance,
            offset_store=store,
            consume_from_where=self.consume_from_where,
            consume_timestamp_ms=self.consume_timestamp_ms,
            orderly=orderly,
            on_added=on_added,
            on_removed=on_removed,
            clock=self.clock,
        )
        return instance, store, rebalancer
