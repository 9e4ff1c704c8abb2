"""A send response read into a SendResult (fact sheet 3.2): compiled, as every sent message passes here.

`MQClientAPI.send_message` and the producer's connection callbacks (send_path.SendCall) both use it.
"""

from __future__ import annotations

from typing import Final

from orbitmq.client.results import SendResult, SendStatus
from orbitmq.common.errors import BrokerError
from orbitmq.message import properties as P
from orbitmq.message.model import MessageQueue
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand

# Send response codes that mean "stored", with the status each maps to.
SEND_STATUS: Final[dict[int, SendStatus]] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


def int_field(resp: RemotingCommand, name: str, default: int = 0) -> int:
    """An int ext field of a response; missing, empty or "null" -> `default`."""
    value = resp.ext_fields.get(name)
    if value is None or value == "" or value == "null":
        return default
    return int(value)


def send_result(
    resp: RemotingCommand,
    addr: str,
    broker_name: str,
    topic: str,
    msg_id: str,
    *,
    sent_to: MessageQueue | None = None,
) -> SendResult:
    """The SendResult of a send response, or BrokerError for a code that means "not stored". `sent_to`
    (the queue the request named) is reused as the result's queue when the broker stored there."""
    status = SEND_STATUS.get(resp.code)
    if status is None:
        raise BrokerError(resp.code, resp.remark, address=addr)
    ext = resp.ext_fields
    queue_id = int_field(resp, "queueId")
    if sent_to is not None and sent_to.queue_id == queue_id:
        mq = sent_to
    else:
        mq = MessageQueue(topic, broker_name, queue_id)
    # positional: SendResult is an interpreted dataclass, and its __init__ called with eight keywords
    # cost twice as much (one per message sent)
    return SendResult(
        status,
        msg_id,
        ext.get("msgId", ""),
        mq,
        int_field(resp, "queueOffset"),
        ext.get("transactionId"),
        ext.get(P.MSG_REGION) or "DefaultRegion",
        ext.get(P.TRACE_ON, "true") != "false",
    )
