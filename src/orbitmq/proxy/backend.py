"""What the proxy uses of the broker it runs in, as protocols the broker meets structurally.

The proxy sits below the broker in the layers (so `orbitmq broker` and `orbitmq serve` can both start
it) and must not import it: BrokerApp is passed in as a `LocalBroker` and mypy checks it at that call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from orbitmq.acl.validator import PlainAccessValidator
from orbitmq.transport.server import RemotingServer


class BrokerSettings(Protocol):
    @property
    def broker_name(self) -> str: ...

    @property
    def broker_ip1(self) -> str: ...

    @property
    def max_message_size(self) -> int: ...

    @property
    def extra(self) -> Mapping[str, str]: ...

    @property
    def timer_wheel_enable(self) -> bool: ...

    @property
    def timer_precision_ms(self) -> int: ...

    @property
    def timer_max_delay_sec(self) -> int: ...


class TopicView(Protocol):
    @property
    def read_queue_nums(self) -> int: ...

    @property
    def write_queue_nums(self) -> int: ...

    @property
    def perm(self) -> int: ...


class TopicTable(Protocol):
    @property
    def table(self) -> Mapping[str, TopicView]: ...


class GroupView(Protocol):
    @property
    def retry_max_times(self) -> int: ...

    @property
    def consume_enable(self) -> bool: ...


class GroupTable(Protocol):
    def find(self, group: str) -> GroupView | None: ...


class QueueOffsets(Protocol):
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...


class LocalBroker(Protocol):
    """The broker as the proxy sees it: its config and tables, and its remoting server, whose
    dispatcher the proxy's in-process connections hand their requests to."""

    @property
    def config(self) -> BrokerSettings: ...

    @property
    def topics(self) -> TopicTable: ...

    @property
    def subscription_groups(self) -> GroupTable: ...

    @property
    def server(self) -> RemotingServer: ...

    @property
    def delay_levels_ms(self) -> Sequence[int]: ...

    @property
    def acl(self) -> PlainAccessValidator | None: ...

    @property
    def store(self) -> QueueOffsets: ...
