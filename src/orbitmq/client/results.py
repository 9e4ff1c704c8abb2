"""The values client calls return: send and pull results, listener statuses, consume contexts.

Pure values; no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from orbitmq.message.model import MessageExt, MessageQueue
from orbitmq.message.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE


class SendStatus(enum.Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(slots=True)
class SendResult:
    # (send_result.send_result builds it with positional arguments: keep the field order)
    status: SendStatus
    msg_id: str  # UNIQ_KEY of the message (comma-joined for a batch)
    offset_msg_id: str  # the broker's id: store host + commit-log offset (comma-joined for a batch)
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


@dataclass(slots=True)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int = 0
    messages: list[MessageExt] = field(default_factory=list)
    body: bytes = b""  # the raw records as the broker sent them (empty unless FOUND)


class ConsumeStatus(enum.Enum):
    """What a concurrent listener answers (RocketMQ ConsumeConcurrentlyStatus)."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


def concurrently_status(answer: object) -> ConsumeStatus | None:
    """What a concurrent listener's answer means: None/True or CONSUME_SUCCESS (the member or its name,
    as RocketMQ users write it) is success, False or RECONSUME_LATER is failure. None for anything else."""
    if answer is None or answer is True:
        return ConsumeStatus.CONSUME_SUCCESS
    if answer is False:
        return ConsumeStatus.RECONSUME_LATER
    if isinstance(answer, ConsumeStatus):
        return answer
    if isinstance(answer, str) and answer in ConsumeStatus.__members__:
        return ConsumeStatus[answer]
    return None


def orderly_status(answer: object) -> ConsumeOrderlyStatus | None:
    """The same for orderly listeners: SUCCESS or SUSPEND_CURRENT_QUEUE_A_MOMENT (member or name)."""
    if answer is None or answer is True:
        return ConsumeOrderlyStatus.SUCCESS
    if answer is False:
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
    if isinstance(answer, ConsumeOrderlyStatus):
        return answer
    if isinstance(answer, str) and answer in ConsumeOrderlyStatus.__members__:
        return ConsumeOrderlyStatus[answer]
    return None


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    message_queue: MessageQueue
    # 0: the broker picks (3 + reconsume times); -1: straight to the DLQ; > 0: this delay level.
    delay_level_when_next_consume: int = 0
    # Messages up to this index succeeded even if the listener answers RECONSUME_LATER.
    ack_index: int = -1


@dataclass(slots=True)
class ConsumeOrderlyContext:
    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_ms: int = -1


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFromWhere(enum.Enum):
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class ConsumeType(enum.Enum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"  # pull / lite pull
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"  # push


class LocalTransactionState(enum.Enum):
    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"  # RocketMQ's spelling

    @property
    def wire_value(self) -> int:
        """commitOrRollback of END_TRANSACTION."""
        return _WIRE[self]


_WIRE = {
    LocalTransactionState.COMMIT_MESSAGE: TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: TRANSACTION_NOT_TYPE,
}


@dataclass(slots=True)
class TransactionSendResult(SendResult):
    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW
