"""5.x clients in the broker's client tables, as RocketMQ 5's proxy registers them: a producer under each
topic it publishes to (the topic is its producer group), a consumer under its group with its
subscriptions. Sent as HEART_BEAT / UNREGISTER_CLIENT over the client's local channel, so the broker's
own processor keeps them (and mqadmin's connection views, and the transaction checks, see them)."""

from __future__ import annotations

from typing import Final

from orbitmq.message.hashing import java_string_hash
from orbitmq.protocol.bodies_client import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    ExpressionType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
)
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.proxy.local_channel import LocalChannel
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.status import Code, ProxyError, from_remoting

TIMEOUT_S: Final = 5.0


def subscription(entry: pb.SubscriptionEntry) -> SubscriptionData:
    expression = entry.expression.expression.strip() or "*"
    if entry.expression.type == pb.SQL:
        return SubscriptionData(entry.topic.name, expression, expression_type=ExpressionType.SQL92)
    tags = [] if expression == "*" else [t.strip() for t in expression.split("||") if t.strip()]
    return SubscriptionData(
        entry.topic.name, expression, tags_set=tags, code_set=sorted({java_string_hash(t) for t in tags})
    )


def heartbeat_data(client_id: str, settings: pb.Settings, group: str = "") -> HeartbeatData:
    data = HeartbeatData(client_id)
    if settings.HasField("publishing"):
        data.producer_data_set = [ProducerData(topic.name) for topic in settings.publishing.topics]
    elif settings.HasField("subscription"):
        active = settings.client_type == pb.SIMPLE_CONSUMER
        data.consumer_data_set = [
            ConsumerData(
                group or settings.subscription.group.name,
                ConsumeType.CONSUME_ACTIVELY if active else ConsumeType.CONSUME_PASSIVELY,
                MessageModel.CLUSTERING,
                ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                [subscription(entry) for entry in settings.subscription.subscriptions],
            )
        ]
    return data


async def register(channel: LocalChannel, client_id: str, settings: pb.Settings) -> None:
    """Tell the broker about the client (again: heartbeats keep it from expiring)."""
    body = heartbeat_data(client_id, settings).to_json()
    answer = await channel.invoke(RemotingCommand.request(RequestCode.HEART_BEAT, body=body), TIMEOUT_S)
    if answer.code != 0:
        raise ProxyError(from_remoting(answer.code), answer.remark or "the broker refused the heartbeat")


async def unregister(channel: LocalChannel, client_id: str, settings: pb.Settings) -> None:
    groups = heartbeat_data(client_id, settings)
    for producer in groups.producer_data_set:
        await _unregister(channel, {"clientID": client_id, "producerGroup": producer.group_name})
    for consumer in groups.consumer_data_set:
        await _unregister(channel, {"clientID": client_id, "consumerGroup": consumer.group_name})


async def _unregister(channel: LocalChannel, header: dict[str, str]) -> None:
    request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header)
    answer = await channel.invoke(request, TIMEOUT_S)
    if answer.code != 0:
        raise ProxyError(Code.INTERNAL_SERVER_ERROR, answer.remark or "the broker refused to unregister")
