"""Transactions over gRPC: EndTransaction as the broker's END_TRANSACTION, and the broker's
CHECK_TRANSACTION_STATE to a 5.x producer as a RecoverOrphanedTransactionCommand on its Telemetry stream.

A 5.x transaction id is opaque to the client; this endpoint makes it "<offset message id>:<half queue
offset>", the two things END_TRANSACTION needs to find the half message (RocketMQ 5's proxy likewise
encodes the broker's offsets into the id it hands out).
"""

from __future__ import annotations

from typing import Final

from orbitmq.common.errors import OrbitError
from orbitmq.message.ids import decode_offset_msg_id
from orbitmq.message.record_decode import decode_record
from orbitmq.message.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.java_values import parse_long
from orbitmq.proxy.convert import to_pb
from orbitmq.proxy.local_channel import LocalChannel
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.route import check_topic
from orbitmq.proxy.status import Code, ProxyError, from_remoting, ok, status

TIMEOUT_S: Final = 10.0
_DECISIONS: Final = {pb.COMMIT: TRANSACTION_COMMIT_TYPE, pb.ROLLBACK: TRANSACTION_ROLLBACK_TYPE}


def transaction_id(offset_msg_id: str, queue_offset: int) -> str:
    return f"{offset_msg_id}:{queue_offset}"


def parse_transaction_id(text: str) -> tuple[str, int, int]:
    """(offset message id, its commit-log offset, the half queue offset); INVALID_TRANSACTION_ID if odd."""
    msg_id, sep, queue_offset = text.partition(":")
    try:
        if not sep or not queue_offset.isdigit():
            raise ValueError(text)
        _, _, commit_log_offset = decode_offset_msg_id(msg_id)
    except (ValueError, OrbitError):
        raise ProxyError(
            Code.INVALID_TRANSACTION_ID, f"not a transaction id of this endpoint: {text!r}"
        ) from None
    return msg_id, commit_log_offset, int(queue_offset)


async def end_transaction(
    channel: LocalChannel, request: spb.EndTransactionRequest
) -> spb.EndTransactionResponse:
    topic = check_topic(request.topic)
    msg_id, commit_log_offset, queue_offset = parse_transaction_id(request.transaction_id)
    decision = _DECISIONS.get(request.resolution)
    if decision is None:  # unknown: nothing to do, the broker asks again later (RocketMQ's no-op)
        return spb.EndTransactionResponse(status=ok())
    header = {
        "producerGroup": topic,  # the 5.x producer group (send.py's PGROUP)
        "tranStateTableOffset": str(queue_offset),
        "commitLogOffset": str(commit_log_offset),
        "commitOrRollback": str(decision),
        "msgId": msg_id,
        "fromTransactionCheck": "true" if request.source == pb.SOURCE_SERVER_CHECK else "false",
        "transactionId": request.message_id,
    }
    answer = await channel.invoke(RemotingCommand.request(RequestCode.END_TRANSACTION, header), TIMEOUT_S)
    if answer.code != ResponseCode.SUCCESS:
        return spb.EndTransactionResponse(status=status(from_remoting(answer.code), answer.remark))
    return spb.EndTransactionResponse(status=ok())


def recover_command(request: RemotingCommand) -> spb.TelemetryCommand:
    """The broker's CHECK_TRANSACTION_STATE (header and half record) as the command a 5.x producer takes."""
    ext = request.ext_fields
    message = decode_record(request.body_bytes())
    queue_offset = parse_long(ext.get("tranStateTableOffset", ""))
    tid = transaction_id(ext.get("offsetMsgId") or message.offset_msg_id, queue_offset)
    command = spb.TelemetryCommand(status=ok())
    command.recover_orphaned_transaction_command.message.CopyFrom(to_pb(message))
    command.recover_orphaned_transaction_command.transaction_id = tid
    return command
