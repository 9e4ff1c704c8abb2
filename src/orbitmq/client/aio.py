"""The asyncio client API in one import: `from orbitmq.client.aio import Producer, PushConsumer, ...`.

Re-exports only; the blocking facade with the same names is `orbitmq.client.blocking`.
"""

from __future__ import annotations

from orbitmq.client.allocation import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateByConfig,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateStrategy,
    MachineRoomResolver,
)
from orbitmq.client.api import MQClientAPI
from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.client.lite_pull_consumer import LitePullConsumer
from orbitmq.client.producer import Producer
from orbitmq.client.push_consumer import PushConsumer
from orbitmq.client.request_reply import create_reply_message
from orbitmq.client.results import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
    PullResult,
    PullStatus,
    SendResult,
    SendStatus,
)
from orbitmq.client.send_request import MessageQueueSelector, put_user_property, select_by_hash
from orbitmq.client.subscription import MessageSelector
from orbitmq.client.transaction_producer import (
    LocalTransactionState,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)
from orbitmq.message.model import Message, MessageExt, MessageQueue

__all__ = [
    "AllocateAveragely",
    "AllocateAveragelyByCircle",
    "AllocateByConfig",
    "AllocateByMachineRoom",
    "AllocateConsistentHash",
    "AllocateMachineRoomNearby",
    "AllocateStrategy",
    "ClientConfig",
    "ClientInstance",
    "ConsumeConcurrentlyContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "LitePullConsumer",
    "LocalTransactionState",
    "MQClientAPI",
    "MachineRoomResolver",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageQueueSelector",
    "MessageSelector",
    "Producer",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "SendResult",
    "SendStatus",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "create_reply_message",
    "put_user_property",
    "select_by_hash",
]
