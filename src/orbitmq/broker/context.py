"""BrokerContext: the narrow view of the broker its processors and services use.

BrokerApp imports every part to wire it up; if the parts imported BrokerApp back (even for typing),
they would form one import circle and could reach anything. They take this Protocol instead, which
BrokerApp implements structurally (checked by mypy); the services it exposes are small protocols too.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from orbitmq.acl import PlainAccessValidator
    from orbitmq.broker.client_registry import ConsumerRegistry, ProducerRegistry
    from orbitmq.broker.config import BrokerConfig
    from orbitmq.broker.config_writer import ConfigWriter
    from orbitmq.broker.consumer_offsets import ConsumerOffsetManager
    from orbitmq.broker.locks import RebalanceLockManager
    from orbitmq.broker.long_polling import PullRequestHoldService
    from orbitmq.broker.stats import BrokerStats
    from orbitmq.broker.subscription_groups import SubscriptionGroupManager
    from orbitmq.broker.topics import TopicConfig, TopicConfigManager
    from orbitmq.broker.transaction.service import TransactionalMessageService
    from orbitmq.common.clock import Clock
    from orbitmq.protocol.command import RemotingCommand
    from orbitmq.replication.master import HAService
    from orbitmq.store.message_store import MessageStore
    from orbitmq.transport.client import RemotingClient


class Registrar(Protocol):
    """The registration service as admin processors see it (re-register after a config change)."""

    async def register_all(self, *, timeout: float | None = None) -> int: ...

    async def register_topics(
        self, topics: Iterable[TopicConfig], *, timeout: float | None = None
    ) -> int: ...


class ReplicationView(Protocol):
    """The replication service as the send processor, registration and metrics see it."""

    @property
    def ha(self) -> HAService | None: ...

    async def wait_replicated(self, end_offset: int) -> int: ...

    def on_registered(self, response: RemotingCommand) -> None: ...

    @property
    def awaiting_master(self) -> bool: ...


class TimerView(Protocol):
    """The timer-message service (services/timer.py) as the send and recall processors see it."""

    def redirect(
        self, topic: str, queue_id: int, sys_flag: int, props: dict[str, str]
    ) -> tuple[str, int]: ...

    def recall(self, topic: str, handle: str) -> str: ...


class ScheduleView(Protocol):
    """The delay-level service's progress, as admin, housekeeping and slave sync see it."""

    @property
    def offsets(self) -> dict[int, int]: ...

    @property
    def delivered(self) -> int: ...

    @property
    def skipped(self) -> int: ...

    def to_json_dict(self) -> dict[str, Any]: ...

    def persist(self) -> None: ...


class BrokerContext(Protocol):
    """The broker as seen by its request processors and background services."""

    hold: PullRequestHoldService | None  # None until the store is open

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def delay_levels_ms(self) -> list[int]: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def subscription_groups(self) -> SubscriptionGroupManager: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def producers(self) -> ProducerRegistry: ...

    @property
    def consumers(self) -> ConsumerRegistry: ...

    @property
    def locks(self) -> RebalanceLockManager: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def acl(self) -> PlainAccessValidator | None: ...

    @property
    def outbound(self) -> RemotingClient: ...

    @property
    def transactions(self) -> TransactionalMessageService: ...

    @property
    def registration(self) -> Registrar: ...

    @property
    def replication(self) -> ReplicationView: ...

    @property
    def schedule(self) -> ScheduleView: ...

    @property
    def timers(self) -> TimerView: ...

    @property
    def started_ms(self) -> int: ...

    @property
    def stopping(self) -> bool: ...

    @property
    def port(self) -> int: ...

    @property
    def broker_addr(self) -> str: ...

    @property
    def ha_server_addr(self) -> str: ...

    @property
    def config_writer(self) -> ConfigWriter: ...

    async def config_durable(self) -> None:
        """Return once every config file change made so far is on disk (the writer thread's)."""
        ...

    def notify_enabled(self, group: str) -> bool: ...

    def spawn_side_task(self, coro: Coroutine[Any, Any, Any]) -> None: ...

    def start_master_services(self) -> None: ...
