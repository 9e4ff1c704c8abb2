"""Where a consumer's offsets live in clustering mode: on the broker of each queue, reached through
the consumers' ClientInstance (the OffsetBackend of offset_store.RemoteBrokerOffsetStore)."""

from __future__ import annotations

from orbitmq.client.instance import ClientInstance
from orbitmq.common.errors import ClientError
from orbitmq.message.model import MessageQueue


class BrokerOffsetBackend:
    """OffsetBackend over a ClientInstance: offsets live on the master of the queue's broker; while the
    master is gone, its slave answers (it holds the offsets synced from the master), as RocketMQ's
    findBrokerAddressInSubscribe does."""

    def __init__(self, instance: ClientInstance) -> None:
        self.instance = instance

    async def _addr(self, mq: MessageQueue) -> str:
        addr = await self.instance.find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            found = self.instance.broker_address_for_subscribe(mq.broker_name)
            if found is not None:
                return found[0]
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int:
        return await self.instance.api.query_consumer_offset(await self._addr(mq), group, mq)

    async def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        await self.instance.api.update_consumer_offset(await self._addr(mq), group, mq, offset)
