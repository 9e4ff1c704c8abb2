"""The store engine: commit log, consume queues, index, flush, recovery and retention (one broker).

A synchronous library; `MessageStore` is the one facade. Byte-compatible with RocketMQ 4.x's store
directory. Knows nothing of sockets, asyncio or request codes.
"""

from orbitmq.store.config import StoreConfig
from orbitmq.store.message_store import MessageStore
from orbitmq.store.results import (
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
)
from orbitmq.store.store_message import StoreBatch, StoreMessage

__all__ = [
    "GetMessageResult",
    "GetMessageStatus",
    "MessageStore",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "StoreBatch",
    "StoreConfig",
    "StoreMessage",
]
