"""What a `ClientInstance` needs of the producers and consumers registered with it."""

from __future__ import annotations

from typing import Any, Protocol

from orbitmq.client.results import ConsumeFromWhere, ConsumeType, MessageModel
from orbitmq.client.subscription import Subscription
from orbitmq.message.model import MessageQueue


class ProducerInner(Protocol):
    group: str

    def publish_topics(self) -> set[str]: ...

    def update_topic_publish_info(self, topic: str, route: Any) -> None: ...


class ConsumerInner(Protocol):
    group: str
    message_model: MessageModel
    consume_type: ConsumeType
    consume_from_where: ConsumeFromWhere

    def subscriptions(self) -> list[Subscription]: ...

    def update_topic_subscribe_info(self, topic: str, mqs: list[MessageQueue]) -> None: ...

    async def do_rebalance(self) -> None: ...

    async def persist_consumer_offset(self) -> None: ...
