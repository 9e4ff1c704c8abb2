"""A put's outcome as a send's answer: code and remark (RocketMQ's handlePutMessageResult)."""

from __future__ import annotations

from typing import Final

from orbitmq.protocol.codes import ResponseCode
from orbitmq.store.config import StoreConfig
from orbitmq.store.disk_space import disk_util

_ILLEGAL: Final = (
    "the message is illegal, maybe msg body or properties length not matched. "
    "msg body length limit 128k, msg properties length limit 32k."
)
_PUT_ERRORS: Final[dict[str, tuple[int, str]]] = {
    "CREATE_MAPEDFILE_FAILED": (
        ResponseCode.SYSTEM_ERROR,
        "create mapped file failed, server is busy or broken.",
    ),
    "MESSAGE_ILLEGAL": (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL),
    "PROPERTIES_SIZE_EXCEEDED": (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL),
    "OS_PAGECACHE_BUSY": (
        ResponseCode.SYSTEM_ERROR,
        "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
    ),
    "UNKNOWN_ERROR": (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}
# Stored, with the outcome of the flush or slave wait as the code.
STORED_CODES: Final = {
    "PUT_OK": ResponseCode.SUCCESS,
    "FLUSH_DISK_TIMEOUT": ResponseCode.FLUSH_DISK_TIMEOUT,
    "FLUSH_SLAVE_TIMEOUT": ResponseCode.FLUSH_SLAVE_TIMEOUT,
    "SLAVE_NOT_AVAILABLE": ResponseCode.SLAVE_NOT_AVAILABLE,
}


def put_refusal(status: str, config: StoreConfig) -> tuple[int, str]:
    """The code and remark of a put the store refused (`status` names its PutMessageStatus)."""
    if status == "SERVICE_NOT_AVAILABLE":
        # RocketMQ's words, with the used ratio of each store directory's file system.
        return (
            ResponseCode.SERVICE_NOT_AVAILABLE,
            "service not available now. It may be caused by one of the following reasons: the broker's "
            f"disk is full [{disk_util(config)}], messages are put to the slave, message store has been "
            "shut down, etc.",
        )
    return _PUT_ERRORS.get(status, (ResponseCode.SYSTEM_ERROR, status))
