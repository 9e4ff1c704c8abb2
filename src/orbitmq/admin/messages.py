"""MessageAdmin: the message operations of AdminClient: view by offset id, query the key index by key
or UNIQ_KEY, pull at an offset, read queue offsets, send one message, commit an offset.

RPCs come from `MQClientAPI` (view, query, pull, offsets); sending goes through a short-lived client
Producer. Knows nothing about argument parsing or output formatting.
"""

from __future__ import annotations

import asyncio

from orbitmq.admin.base import (
    LONG_MAX,
    TOOLS_CONSUMER_GROUP,
    TOOLS_PRODUCER_GROUP,
    AdminBase,
    AdminError,
    valid_address,
)
from orbitmq.client.results import PullResult, PullStatus, SendResult
from orbitmq.common.errors import BrokerError, ClientError, ConnectError, OrbitError, RequestTimeoutError
from orbitmq.message.codec import decode_offset_msg_id
from orbitmq.message.model import Message, MessageExt, MessageQueue


class MessageAdmin(AdminBase):
    """Message operations (AdminClient inherits them)."""

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """VIEW_MESSAGE_BY_ID on the broker encoded in the offset message id."""
        ip, port, physical_offset = decode_offset_msg_id(offset_msg_id)
        addr = f"{ip}:{port}"
        if not valid_address(addr):
            raise ClientError(f"not an offset message id (port {port} out of range): {offset_msg_id!r}")
        return await self.api.view_message(addr, physical_offset, self.timeout)

    async def query_message_by_id(self, msg_id: str, topic: str | None = None) -> list[MessageExt]:
        """An offset msg id (viewed on its broker) or, with `topic`, a UNIQ_KEY (key index query).

        Both are 32 hex digits, so as mqadmin does: try the offset id first, fall back to the key."""
        known = {b.address for b in await self.brokers()} if topic else set()
        error: OrbitError | None = None
        try:
            ip, port, _ = decode_offset_msg_id(msg_id)
        except ClientError as exc:
            error = exc
        else:
            # With a topic, only try addresses the name server knows: a UNIQ_KEY decodes to an
            # arbitrary client address that must not be dialled.
            if not topic or f"{ip}:{port}" in known:
                try:
                    return [await self.view_message(msg_id)]
                except (BrokerError, ClientError, ConnectError, RequestTimeoutError) as exc:
                    error = exc
        if topic:
            found = await self._query_index(topic, msg_id, max_num=32, unique=True)
            if found:
                return found
            raise AdminError(f"no message with id {msg_id} in topic {topic!r}")
        assert error is not None
        raise AdminError(f"message {msg_id} not found ({error}); give -t TOPIC to look a UNIQ_KEY up")

    async def query_message_by_key(
        self, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0, end_ms: int = LONG_MAX
    ) -> list[MessageExt]:
        return await self._query_index(topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms)

    async def _query_index(
        self,
        topic: str,
        key: str,
        *,
        max_num: int,
        unique: bool = False,
        begin_ms: int = 0,
        end_ms: int = LONG_MAX,
    ) -> list[MessageExt]:
        masters = await self.topic_masters(topic)
        results = await asyncio.gather(
            *(
                self.api.query_message(
                    addr, topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms, unique_key=unique
                )
                for addr in masters.values()
            )
        )
        seen: set[str] = set()
        out = []
        for messages in results:
            for msg in messages:
                # The index is a hash table: drop collisions, keep each stored record once.
                match = msg.msg_id == key if unique else key in msg.key_list
                if match and msg.topic == topic and msg.offset_msg_id not in seen:
                    seen.add(msg.offset_msg_id)
                    out.append(msg)
        out.sort(key=lambda m: (m.store_timestamp, m.commit_log_offset))
        return out[:max_num] if not unique else out

    async def pull(
        self, mq: MessageQueue, offset: int, max_nums: int = 32, *, group: str = TOOLS_CONSUMER_GROUP
    ) -> PullResult:
        """One PULL_MESSAGE from the queue's master, no offset commit, no long polling."""
        addr = await self.master_of(mq.topic, mq.broker_name)
        return await self.api.pull_plain(
            addr, mq, offset, group=group, max_nums=max_nums, timeout=self.timeout
        )

    async def query_message_by_offset(
        self, topic: str, broker_name: str, queue_id: int, offset: int
    ) -> MessageExt:
        result = await self.pull(MessageQueue(topic, broker_name, queue_id), offset, 1)
        if result.status is not PullStatus.FOUND or not result.messages:
            raise AdminError(
                f"no message at offset {offset} of {topic}/{broker_name}/{queue_id} ({result.status.value}; "
                f"the queue holds offsets {result.min_offset}..{result.max_offset - 1})"
            )
        return result.messages[0]

    async def queue_offsets(self, mq: MessageQueue) -> tuple[int, int]:
        addr = await self.master_of(mq.topic, mq.broker_name)
        return await self.api.get_min_offset(addr, mq), await self.api.get_max_offset(addr, mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        addr = await self.master_of(mq.topic, mq.broker_name)
        return await self.api.search_offset(addr, mq, timestamp_ms)

    async def read_queues(self, topic: str) -> list[MessageQueue]:
        route = await self.topic_route(topic)
        return sorted(
            MessageQueue(topic, qd.broker_name, q)
            for qd in route.queue_datas
            for q in range(qd.read_queue_nums)
        )

    async def send_message(
        self,
        topic: str,
        body: bytes,
        *,
        keys: str | None = None,
        tags: str | None = None,
        broker_name: str | None = None,
        queue_id: int | None = None,
        group: str = TOOLS_PRODUCER_GROUP,
    ) -> SendResult:
        """Send one message with a short-lived producer (to one queue if broker and queue are given)."""
        from orbitmq.client.config import ClientConfig
        from orbitmq.client.producer import Producer

        msg = Message.create(topic, body, tags=tags or None, keys=keys or None)
        config = ClientConfig(namesrv_addrs=list(self.namesrv_addrs), api_timeout=self.timeout)
        config.set_security(**self.security)
        async with Producer(group, config=config, send_timeout=self.timeout) as producer:
            if broker_name is not None and queue_id is not None:
                return await producer.send(msg, queue=MessageQueue(topic, broker_name, queue_id))
            return await producer.send(msg)

    async def commit_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        """UPDATE_CONSUMER_OFFSET (acknowledged) on the queue's master."""
        addr = await self.master_of(mq.topic, mq.broker_name)
        await self.api.update_consumer_offset(addr, group, mq, offset, oneway=False)
