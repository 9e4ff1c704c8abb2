"""QUERY_MESSAGE (by key, through the index) and VIEW_MESSAGE_BY_ID (by commit-log offset).

Bodies are the raw stored records, sent from the store's memoryviews without copying.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitmq.broker.processors.base import BadRequest, Fields, guarded, success
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer


def register(server: RemotingServer, app: BrokerContext) -> None:
    async def query_message(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        topic, key = f.req_str("topic"), f.req_str("key")
        max_num = f.req_int("maxNum")
        begin, end = f.req_long("beginTimestamp"), f.req_long("endTimestamp")
        # RocketMQ's QueryMessageProcessor compares this one flag as text: exactly "true", not parseBoolean
        if request.ext_fields.get("_UNIQUE_KEY_QUERY") == "true":
            max_num = app.config.default_query_max_num
        if max_num <= 0:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"maxNum[{max_num}] is illegal")
        result = app.store.query_message(topic, key, max_num, begin, end)
        ext = {
            "indexLastUpdateTimestamp": str(result.index_last_update_timestamp),
            "indexLastUpdatePhyoffset": str(result.index_last_update_phyoffset),
        }
        if not result.buffers:
            return RemotingCommand.response(
                ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", ext
            )
        response = success(ext)
        response.body_parts = list(result.buffers)
        return response

    async def view_message(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        offset = Fields(request.ext_fields).req_long("offset")
        raw = app.store.select_one_message_by_offset(offset) if offset >= 0 else None
        if raw is None:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
        response = success()
        response.body_parts = [raw]
        return response

    server.register(RequestCode.QUERY_MESSAGE, guarded(query_message))
    server.register(RequestCode.VIEW_MESSAGE_BY_ID, guarded(view_message))
