"""RECALL_MESSAGE (370, RocketMQ 5): a producer takes back a timer message that is not delivered yet.

The recall handle came with the send's answer; the broker checks it against the topic and itself and puts
a recall into the timer wheel (TimerMessageService.recall): the message is dropped when its slot comes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from orbitmq.broker.processors.base import BadRequest, Fields, guarded, success
from orbitmq.protocol.codes import ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.perm import is_writeable
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer

RECALL_MESSAGE: Final = 370
ILLEGAL_OPERATION: Final = 604


def register(server: RemotingServer, app: BrokerContext) -> None:
    async def recall_message(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        topic, handle = f.req_str("topic"), f.req_str("recallHandle")
        if app.config.broker_role == "SLAVE":
            raise BadRequest(ResponseCode.SLAVE_NOT_AVAILABLE, "recall failed, broker service not available")
        if not is_writeable(app.config.broker_permission):
            raise BadRequest(
                ResponseCode.SERVICE_NOT_AVAILABLE, "recall failed, broker service not available"
            )
        if topic not in app.topics.table:
            raise BadRequest(ResponseCode.TOPIC_NOT_EXIST, f"recall failed, the topic[{topic}] not exist")
        try:
            message_id = app.timers.recall(topic, handle)
        except ValueError as exc:
            raise BadRequest(ILLEGAL_OPERATION, str(exc)) from None
        return success({"msgId": message_id})

    server.register(RECALL_MESSAGE, guarded(recall_message))
