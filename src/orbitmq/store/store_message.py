"""What the broker hands the store to append: StoreMessage (RocketMQ's MessageExtBrokerInner) and StoreBatch.

Properties arrive already encoded (the broker added CLUSTER, removed WAIT, ...); the store reads TAGS,
KEYS, UNIQ_KEY and DELAY from them for the consume queue and the index. Delayed messages are redirected
to SCHEDULE_TOPIC_XXXX by the broker before the put (the store only derives their delivery-time tags code).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from orbitmq.message.batch_scan import ScannedBatch
from orbitmq.message.hosts import pack_address, pack_host
from orbitmq.message.model import MessageExt
from orbitmq.message.property_string import encode_properties

Buffer = bytes | bytearray | memoryview


class BatchItem(Protocol):
    """One message of a batch body (message.codec.BatchEntry satisfies it)."""

    @property
    def flag(self) -> int: ...

    @property
    def body(self) -> Buffer: ...

    @property
    def properties(self) -> str: ...


# Plain classes with explicit __init__ (not dataclasses): compiled with mypyc, a dataclass keeps its
# generated __init__ interpreted, and one StoreMessage is built per sent message.
class StoreMessage:
    __slots__ = (
        "body",
        "born_host",
        "born_timestamp",
        "flag",
        "keys",
        "prepared_transaction_offset",
        "properties",
        "properties_read",
        "queue_id",
        "reconsume_times",
        "sys_flag",
        "tags_code",
        "topic",
        "uniq_key",
    )

    def __init__(  # noqa: PLR0917 -- RocketMQ's MessageExtBrokerInner, positional as before
        self,
        topic: str,
        queue_id: int,
        flag: int,
        body: Buffer,
        properties: str,
        sys_flag: int,
        born_timestamp: int,
        born_host: bytes,  # message.hosts.pack_host(ip, port): 8 or 20 bytes
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
        tags_code: int | None = None,  # computed from TAGS (or the delay) when None
        properties_read: bool = False,
        keys: str | None = None,
        uniq_key: str | None = None,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.flag = flag
        self.body = body
        self.properties = properties
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        self.tags_code = tags_code
        # Set by a caller that already read the properties text (the broker's send path): the store then
        # takes tags_code (None = 0), keys and uniq_key as given instead of decoding the text again.
        self.properties_read = properties_read
        self.keys = keys
        self.uniq_key = uniq_key

    def _fields(self) -> tuple[object, ...]:
        return (
            self.topic,
            self.queue_id,
            self.flag,
            self.body,
            self.properties,
            self.sys_flag,
            self.born_timestamp,
            self.born_host,
            self.reconsume_times,
            self.prepared_transaction_offset,
            self.tags_code,
            self.properties_read,
            self.keys,
            self.uniq_key,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoreMessage):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as the dataclass was)

    def __repr__(self) -> str:
        return f"StoreMessage(topic={self.topic!r}, queue_id={self.queue_id}, sys_flag={self.sys_flag})"


class StoreBatch:
    __slots__ = (
        "born_host",
        "born_timestamp",
        "entries",
        "properties",
        "queue_id",
        "reconsume_times",
        "scanned",
        "sys_flag",
        "topic",
    )

    def __init__(  # noqa: PLR0917 -- positional as the dataclass was
        self,
        topic: str,
        queue_id: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: bytes,
        entries: Sequence[BatchItem],
        properties: str = "",  # batch-level properties appended to each message's own (CLUSTER, WAIT)
        reconsume_times: int = 0,
        scanned: ScannedBatch | None = None,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.entries = entries
        self.properties = properties
        self.reconsume_times = reconsume_times
        # The broker's batch path: the body checked once and described by offsets (entries left empty);
        # MessageStore appends it in one pass (store/batch_append.py).
        self.scanned = scanned

    def __repr__(self) -> str:
        return f"StoreBatch(topic={self.topic!r}, queue_id={self.queue_id})"


def stored_again(
    msg: MessageExt, topic: str, queue_id: int, properties: dict[str, str], reconsume_times: int
) -> StoreMessage:
    """A stored message put once more, to `topic` / `queue_id` with new properties: its flag, body,
    sys flag, born time and born host kept (a retry, a DLQ entry, a delayed message come due)."""
    return StoreMessage(
        topic=topic,
        queue_id=queue_id,
        flag=msg.flag,
        body=msg.body,
        properties=encode_properties(properties),
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=pack_address(msg.born_host) if msg.born_host else pack_host("127.0.0.1", 0),
        reconsume_times=reconsume_times,
    )
