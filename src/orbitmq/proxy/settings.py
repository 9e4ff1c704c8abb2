"""Client settings, both ways: what each 5.x client reported over Telemetry, and what the server answers.

A producer is told the retry policy, the largest body and to check message types; a consumer the
receive batch, the long-polling bound, FIFO and its group's retries (max attempts = retryMaxTimes + 1,
backing off by the broker's delay levels, as 4.x retries do). Values follow RocketMQ 5's proxy defaults.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Final

from orbitmq.proxy.backend import LocalBroker
from orbitmq.proxy.pb import definition_pb2 as pb

DEFAULT_MAX_CLIENTS: Final = 10000


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """RocketMQ 5 ProxyConfig values the answers use."""

    producer_max_attempts: int = 3
    producer_backoff_initial_ms: int = 10
    producer_backoff_max_ms: int = 1000
    producer_backoff_multiplier: float = 2.0
    validate_message_type: bool = True
    consumer_batch_size: int = 32
    consumer_long_polling_max_ms: int = 20_000


class ClientSettingsTable:
    """Client id -> the settings it reported; at most `max_clients` (the least recently updated goes)."""

    def __init__(
        self, broker: LocalBroker, proxy: ProxySettings | None = None, max_clients: int = DEFAULT_MAX_CLIENTS
    ) -> None:
        self._broker = broker
        self.proxy = proxy or ProxySettings()
        self._max = max_clients
        self._raw: collections.OrderedDict[str, pb.Settings] = collections.OrderedDict()

    def update(self, client_id: str, settings: pb.Settings) -> None:
        self._raw[client_id] = settings
        self._raw.move_to_end(client_id)
        while len(self._raw) > self._max:
            self._raw.popitem(last=False)

    def raw(self, client_id: str) -> pb.Settings | None:
        return self._raw.get(client_id)

    def remove(self, client_id: str) -> pb.Settings | None:
        return self._raw.pop(client_id, None)

    def answer(self, client_id: str) -> pb.Settings | None:
        """The client's settings as the server fills them in (None for an unknown client)."""
        raw = self._raw.get(client_id)
        if raw is None:
            return None
        merged = pb.Settings()
        merged.CopyFrom(raw)
        if merged.HasField("publishing"):
            self._fill_producer(merged)
        elif merged.HasField("subscription"):
            self._fill_consumer(merged)
        merged.metric.on = False
        merged.metric.ClearField("endpoints")
        return merged

    def _fill_producer(self, settings: pb.Settings) -> None:
        proxy = self.proxy
        backoff = settings.backoff_policy
        backoff.max_attempts = proxy.producer_max_attempts
        exponential = backoff.exponential_backoff
        exponential.initial.FromMilliseconds(proxy.producer_backoff_initial_ms)
        exponential.max.FromMilliseconds(proxy.producer_backoff_max_ms)
        exponential.multiplier = proxy.producer_backoff_multiplier
        settings.publishing.validate_message_type = proxy.validate_message_type
        settings.publishing.max_body_size = self._broker.config.max_message_size

    def _fill_consumer(self, settings: pb.Settings) -> None:
        proxy = self.proxy
        subscription = settings.subscription
        subscription.receive_batch_size = proxy.consumer_batch_size
        subscription.long_polling_timeout.FromMilliseconds(proxy.consumer_long_polling_max_ms)
        # orbitmq's groups have no consumeMessageOrderly yet: no group is FIFO.
        subscription.fifo = False
        backoff = settings.backoff_policy
        backoff.max_attempts = self.max_attempts(subscription.group.name)
        backoff.customized_backoff.ClearField("next")
        for delay_ms in self._broker.delay_levels_ms:
            backoff.customized_backoff.next.add().FromMilliseconds(delay_ms)

    def max_attempts(self, group: str) -> int:
        """Deliveries of one message to `group`: its retryMaxTimes + 1 (RocketMQ 5)."""
        found = self._broker.subscription_groups.find(group)
        return (found.retry_max_times if found is not None else 16) + 1

    def __len__(self) -> int:
        return len(self._raw)
