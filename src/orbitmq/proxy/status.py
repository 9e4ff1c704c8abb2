"""RocketMQ 5's response statuses: the `Code` of a refused request and the error that carries it.

Every MessagingService answer has a `Status`; failures are answered there (the gRPC status stays OK),
as RocketMQ's proxy does, so the clients' own result checkers map them to their exceptions.
"""

from __future__ import annotations

from typing import Final

from orbitmq.protocol.codes import ResponseCode
from orbitmq.proxy.pb import definition_pb2 as pb

Code: Final = pb.Code


class ProxyError(Exception):
    """A request refused with `code` (a `Code` value) and a message for the client."""

    def __init__(self, code: pb.Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def status(self) -> pb.Status:
        return status(self.code, self.message)


def status(code: pb.Code, message: str | None = None) -> pb.Status:
    return pb.Status(code=code, message=message if message is not None else pb.Code.Name(code))


def ok() -> pb.Status:
    return status(pb.Code.OK)


# The broker's remoting answers as RocketMQ's proxy reports them (ResponseBuilder and the send results).
_REMOTING_CODES: Final[dict[int, pb.Code]] = {
    ResponseCode.SUCCESS: pb.Code.OK,
    ResponseCode.SYSTEM_BUSY: pb.Code.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: pb.Code.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: pb.Code.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.TOPIC_NOT_EXIST: pb.Code.TOPIC_NOT_FOUND,
    ResponseCode.NO_PERMISSION: pb.Code.FORBIDDEN,
    ResponseCode.MESSAGE_ILLEGAL: pb.Code.BAD_REQUEST,
    ResponseCode.FLUSH_DISK_TIMEOUT: pb.Code.MASTER_PERSISTENCE_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: pb.Code.SLAVE_PERSISTENCE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: pb.Code.HA_NOT_AVAILABLE,
}


def from_remoting(code: int) -> pb.Code:
    """The `Code` for a broker's remoting response code (INTERNAL_SERVER_ERROR for the rest)."""
    return _REMOTING_CODES.get(code, pb.Code.INTERNAL_SERVER_ERROR)
