"""A message the listener could not consume goes back to the broker: CONSUMER_SEND_MSG_BACK to the
message's broker (it schedules the retry), and when that fails, re-sent by the consumer itself to the
group's retry topic through an inner producer (as RocketMQ's sendMessageBack does)."""

from __future__ import annotations

import logging

from orbitmq.client.instance import CLIENT_INNER_PRODUCER_GROUP, ClientInstance
from orbitmq.client.producer import Producer
from orbitmq.client.rebalance import retry_topic
from orbitmq.common.clock import Clock
from orbitmq.message import properties as P
from orbitmq.message.model import Message, MessageExt, MessageQueue

log = logging.getLogger("orbitmq.client")


class SendBack:
    """One consumer group's way back to the broker; owns the inner producer it may start."""

    def __init__(self, group: str, instance: ClientInstance, clock: Clock) -> None:
        self.group = group
        self.instance = instance
        self.clock = clock
        self._inner_producer: Producer | None = None

    async def send(self, msg: MessageExt, delay_level: int, mq: MessageQueue, max_reconsume: int) -> bool:
        """False only when both ways failed (the caller then retries locally)."""
        addr = self.instance.master_address(mq.broker_name) or msg.store_host
        try:
            await self.instance.api.consumer_send_message_back(
                addr,
                msg,
                self.group,
                delay_level=delay_level,
                max_reconsume_times=max_reconsume,
                broker_name=mq.broker_name,
            )
            return True
        except Exception as exc:
            log.debug("%s: send back of %s failed (%s); re-sending it", self.group, msg.msg_id, exc)
        return await self.via_producer(msg, 3 + msg.reconsume_times, max_reconsume)

    async def via_producer(self, msg: MessageExt, delay_level: int, max_reconsume: int) -> bool:
        props = dict(msg.properties)
        props.setdefault(P.ORIGIN_MESSAGE_ID, msg.msg_id)
        props.setdefault(P.RETRY_TOPIC, msg.topic)
        props[P.RECONSUME_TIME] = str(msg.reconsume_times + 1)
        props[P.MAX_RECONSUME_TIMES] = str(max_reconsume)
        props[P.DELAY] = str(max(delay_level, 1))
        for transient in (P.MIN_OFFSET, P.MAX_OFFSET, P.TRAN_MSG, P.CLUSTER):
            props.pop(transient, None)
        retry = Message(retry_topic(self.group), msg.body, msg.flag, props)
        try:
            producer = await self._producer()
            await producer.send(retry)
            return True
        except Exception as exc:
            log.warning("%s: re-sending %s to %s failed: %s", self.group, msg.msg_id, retry.topic, exc)
            return False

    async def _producer(self) -> Producer:
        if self._inner_producer is None:
            group = CLIENT_INNER_PRODUCER_GROUP
            if group in self.instance.producers:
                group = f"{CLIENT_INNER_PRODUCER_GROUP}_{self.group}"
            self._inner_producer = Producer(group, instance=self.instance, clock=self.clock)
            await self._inner_producer.start()
        return self._inner_producer

    async def shutdown(self) -> None:
        if self._inner_producer is not None:
            await self._inner_producer.shutdown()
