"""What the store answers: status enums named exactly as RocketMQ's, and the result values.

The broker maps these to response codes (fact sheet 3.2, 3.4); the store itself knows no codes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from orbitmq.message.ids import offset_msg_id, offset_msg_ids


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetMessageStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class PutMessageResult:
    """The outcome of a put (RocketMQ's PutMessageResult + AppendMessageResult, flattened).

    For a batch, `wrote_offset`/`queue_offset` are those of the first message, `msg_id` the offset ids of
    all messages joined by ",", `msg_num` the count. `end_offset` (wrote_offset + wrote_bytes) is what a
    SYNC_FLUSH caller passes to `request_flush`. A plain class with an explicit __init__ (one per put;
    compiled with mypyc, a dataclass's generated __init__ would stay interpreted).
    """

    __slots__ = (
        "batch_offsets",
        "msg_num",
        "queue_offset",
        "remark",
        "status",
        "store_host",
        "store_timestamp",
        "wrote_bytes",
        "wrote_offset",
    )

    def __init__(  # noqa: PLR0917 -- positional as the dataclass was
        self,
        status: PutMessageStatus,
        wrote_offset: int = 0,
        wrote_bytes: int = 0,
        store_timestamp: int = 0,
        queue_offset: int = 0,
        msg_num: int = 0,
        remark: str = "",
        store_host: bytes = b"",  # pack_host of the broker: the first part of every offset message id
        batch_offsets: list[int] | None = None,  # physical offsets of a batch's messages
    ) -> None:
        self.status = status
        self.wrote_offset = wrote_offset
        self.wrote_bytes = wrote_bytes
        self.store_timestamp = store_timestamp
        self.queue_offset = queue_offset
        self.msg_num = msg_num
        self.remark = remark
        self.store_host = store_host
        self.batch_offsets = batch_offsets

    def _fields(self) -> tuple[object, ...]:
        return (
            self.status,
            self.wrote_offset,
            self.wrote_bytes,
            self.store_timestamp,
            self.queue_offset,
            self.msg_num,
            self.remark,
            self.store_host,
            self.batch_offsets,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PutMessageResult):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as the dataclass was)

    def __repr__(self) -> str:
        return (
            f"PutMessageResult(status={self.status}, wrote_offset={self.wrote_offset}, "
            f"queue_offset={self.queue_offset}, msg_num={self.msg_num}, remark={self.remark!r})"
        )

    @property
    def msg_id(self) -> str:
        """The offset message id(s) (fact sheet 5.5), computed on demand; "," joins a batch's ids."""
        if self.status is not PutMessageStatus.PUT_OK or not self.store_host:
            return ""
        if self.batch_offsets is not None:
            return offset_msg_ids(self.store_host, self.batch_offsets)
        return offset_msg_id(self.store_host, self.wrote_offset)

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK

    @property
    def end_offset(self) -> int:
        return self.wrote_offset + self.wrote_bytes


@dataclass(slots=True)
class GetMessageResult:
    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    buffers: list[memoryview] = field(default_factory=list)  # whole records, zero-copy views
    message_count: int = 0
    suggest_pull_from_slave: bool = False
    buffer_total_size: int = 0
    # Queue offsets of the returned messages, parallel to `buffers` (the broker uses them for stats).
    queue_offsets: list[int] = field(default_factory=list)


@dataclass(slots=True)
class QueryMessageResult:
    buffers: list[memoryview] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0
    buffer_total_size: int = 0
