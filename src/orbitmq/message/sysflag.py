"""MessageSysFlag: the bits of a record's SYSFLAG field (fact sheet 5.2).

The values are part of the record format (commit log, pull bodies) and of the send headers, so they
never change. This module holds constants and pure bit arithmetic only.
"""

from __future__ import annotations

from typing import Final

# The bits as module constants: compiled code inlines a literal Final (a name bound to a class attribute
# would be a dict lookup per use).
COMPRESSED_FLAG: Final = 0x1
MULTI_TAGS_FLAG: Final = 0x2
TRANSACTION_NOT_TYPE: Final = 0x0
TRANSACTION_PREPARED_TYPE: Final = 0x4
TRANSACTION_COMMIT_TYPE: Final = 0x8
TRANSACTION_ROLLBACK_TYPE: Final = 0xC
BORNHOST_V6_FLAG: Final = 0x10
STOREHOSTADDRESS_V6_FLAG: Final = 0x20
NEED_UNWRAP_FLAG: Final = 0x40
INNER_BATCH_FLAG: Final = 0x80
COMPRESSION_LZ4_TYPE: Final = 0x100
COMPRESSION_ZSTD_TYPE: Final = 0x200
COMPRESSION_ZLIB_TYPE: Final = 0x300
COMPRESSION_TYPE_MASK: Final = 0x700
TRANSACTION_TYPE_MASK: Final = 0xC


class MessageSysFlag:
    """Bit masks of SYSFLAG, named as RocketMQ names them."""

    COMPRESSED_FLAG: Final = COMPRESSED_FLAG
    MULTI_TAGS_FLAG: Final = MULTI_TAGS_FLAG
    TRANSACTION_NOT_TYPE: Final = TRANSACTION_NOT_TYPE
    TRANSACTION_PREPARED_TYPE: Final = TRANSACTION_PREPARED_TYPE
    TRANSACTION_COMMIT_TYPE: Final = TRANSACTION_COMMIT_TYPE
    TRANSACTION_ROLLBACK_TYPE: Final = TRANSACTION_ROLLBACK_TYPE
    BORNHOST_V6_FLAG: Final = BORNHOST_V6_FLAG
    STOREHOSTADDRESS_V6_FLAG: Final = STOREHOSTADDRESS_V6_FLAG
    NEED_UNWRAP_FLAG: Final = NEED_UNWRAP_FLAG
    INNER_BATCH_FLAG: Final = INNER_BATCH_FLAG
    COMPRESSION_LZ4_TYPE: Final = COMPRESSION_LZ4_TYPE
    COMPRESSION_ZSTD_TYPE: Final = COMPRESSION_ZSTD_TYPE
    COMPRESSION_ZLIB_TYPE: Final = COMPRESSION_ZLIB_TYPE
    COMPRESSION_TYPE_MASK: Final = COMPRESSION_TYPE_MASK
    TRANSACTION_TYPE_MASK: Final = TRANSACTION_TYPE_MASK


def transaction_type(sys_flag: int) -> int:
    """The transaction type bits (NOT 0x0, PREPARED 0x4, COMMIT 0x8, ROLLBACK 0xC)."""
    return sys_flag & TRANSACTION_TYPE_MASK


def reset_transaction_type(sys_flag: int, tx_type: int) -> int:
    """`sys_flag` with its transaction type replaced by `tx_type`."""
    return (sys_flag & ~TRANSACTION_TYPE_MASK) | (tx_type & TRANSACTION_TYPE_MASK)
