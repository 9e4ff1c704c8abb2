"""What the broker hands the store to append: StoreMessage (RocketMQ's MessageExtBrokerInner) and StoreBatch.

Properties arrive already encoded (the broker added CLUSTER, removed WAIT, ...); the store reads TAGS,
KEYS, UNIQ_KEY and DELAY from them for the consume queue and the index. Delayed messages are redirected
to SCHEDULE_TOPIC_XXXX by the broker before the put (the store only derives their delivery-time tags code).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

Buffer = bytes | bytearray | memoryview


class BatchItem(Protocol):
    """One message of a batch body (message.codec.BatchEntry satisfies it)."""

    @property
    def flag(self) -> int: ...

    @property
    def body(self) -> Buffer: ...

    @property
    def properties(self) -> str: ...


@dataclass(slots=True)
class StoreMessage:
    topic: str
    queue_id: int
    flag: int
    body: Buffer
    properties: str
    sys_flag: int
    born_timestamp: int
    born_host: bytes  # message.hosts.pack_host(ip, port): 8 or 20 bytes
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    tags_code: int | None = None  # computed from TAGS (or the delay) when None
    # Set by a caller that already read the properties text (the broker's send path): the store then
    # takes tags_code (None = 0), keys and uniq_key as given instead of decoding the text again.
    properties_read: bool = False
    keys: str | None = None
    uniq_key: str | None = None


@dataclass(slots=True)
class StoreBatch:
    topic: str
    queue_id: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    entries: Sequence[BatchItem]
    properties: str = ""  # batch-level properties appended to each message's own (CLUSTER, WAIT, ...)
    reconsume_times: int = 0
