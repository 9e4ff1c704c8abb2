"""Offset requests: QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP,
GET_EARLIEST_MSG_STORETIME (fact sheet 3.5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitmq.broker.processors.base import Fields, guarded, success
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer


def register(server: RemotingServer, app: BrokerContext) -> None:
    async def query_consumer_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        group, topic, queue_id = f.req_str("consumerGroup"), f.req_str("topic"), f.req_int("queueId")
        offset = app.offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return success({"offset": str(offset)})
        # A group new to this queue starts at 0 while the queue still begins at 0 (fact sheet 3.5).
        if app.store.get_min_offset_in_queue(topic, queue_id) <= 0:
            return success({"offset": "0"})
        return RemotingCommand.response(
            ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )

    async def update_consumer_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        group, topic, queue_id = f.req_str("consumerGroup"), f.req_str("topic"), f.req_int("queueId")
        offset = f.req_long("commitOffset")
        if offset >= 0:
            app.offsets.commit_offset(group, topic, queue_id, offset)
        return success()

    async def get_max_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        return success(
            {"offset": str(app.store.get_max_offset_in_queue(f.req_str("topic"), f.req_int("queueId")))}
        )

    async def get_min_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        return success(
            {"offset": str(app.store.get_min_offset_in_queue(f.req_str("topic"), f.req_int("queueId")))}
        )

    async def search_offset(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        offset = app.store.get_offset_in_queue_by_time(
            f.req_str("topic"), f.req_int("queueId"), f.req_long("timestamp")
        )
        return success({"offset": str(offset)})

    async def earliest_store_time(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = Fields(request.ext_fields)
        ts = app.store.get_earliest_message_time(f.req_str("topic"), f.req_int("queueId"))
        return success({"timestamp": str(ts)})

    server.register(RequestCode.QUERY_CONSUMER_OFFSET, guarded(query_consumer_offset))
    server.register(RequestCode.UPDATE_CONSUMER_OFFSET, guarded(update_consumer_offset))
    server.register(RequestCode.GET_MAX_OFFSET, guarded(get_max_offset))
    server.register(RequestCode.GET_MIN_OFFSET, guarded(get_min_offset))
    server.register(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, guarded(search_offset))
    server.register(RequestCode.GET_EARLIEST_MSG_STORETIME, guarded(earliest_store_time))
