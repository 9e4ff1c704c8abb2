"""LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: orderly consumers lock queues on the master (fact sheet 4.8, 7.9)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from orbitmq.broker.config_files import load_json
from orbitmq.broker.processors.base import BadRequest, check_group, check_topic, guarded, success
from orbitmq.message.model import MessageQueue
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer


def _parse(body: bytes) -> tuple[str, str, list[MessageQueue]]:
    try:
        data = load_json(body)
        group = data["consumerGroup"]
        client_id = data["clientId"]
        mqs = [
            MessageQueue(check_topic(str(m["topic"])), str(m["brokerName"]), int(m["queueId"]))
            for m in data.get("mqSet") or []
        ]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise BadRequest(ResponseCode.SYSTEM_ERROR, f"malformed lock request body: {exc!r}") from None
    if not isinstance(group, str) or not isinstance(client_id, str):
        raise BadRequest(ResponseCode.SYSTEM_ERROR, "lock request needs consumerGroup and clientId strings")
    check_group(group)
    return group, client_id, mqs


def _mq_json(mq: MessageQueue) -> dict[str, Any]:
    return {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}


def register(server: RemotingServer, app: BrokerContext) -> None:
    async def lock(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        group, client_id, mqs = _parse(request.body_bytes())
        locked = app.locks.try_lock_batch(group, mqs, client_id)
        return success(body=orjson.dumps({"lockOKMQSet": [_mq_json(mq) for mq in sorted(locked)]}))

    async def unlock(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        group, client_id, mqs = _parse(request.body_bytes())
        app.locks.unlock_batch(group, mqs, client_id)
        return success()

    server.register(RequestCode.LOCK_BATCH_MQ, guarded(lock))
    server.register(RequestCode.UNLOCK_BATCH_MQ, guarded(unlock))
