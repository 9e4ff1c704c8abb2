"""What a request needs: (resource, permission) pairs per request code (PlainAccessValidator.parse).

Groups are checked as their `%RETRY%<group>` topic; codes not listed need no resource. Beyond RocketMQ
4.9.8, SEND_BATCH_MESSAGE and the reply sends need PUB on their topic like SEND_MESSAGE_V2 (4.9.8
checks nothing for them, so a SUB-only account could publish in batches).
"""

from __future__ import annotations

from collections.abc import Mapping

from orbitmq.acl.errors import AclError
from orbitmq.acl.permissions import PUB, RETRY_PREFIX, SUB, retry_topic
from orbitmq.protocol.bodies_client import HeartbeatData
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand

_V2_SENDS = frozenset(
    {
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE_V2,
    }
)
_V1_SENDS = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE})


def _send(resources: dict[str, int], topic: str | None, group: str | None) -> None:
    if topic is not None and topic.startswith(RETRY_PREFIX):
        if group is not None:
            _add(resources, retry_topic(group), SUB)
    else:
        _add(resources, topic, PUB)


def _add(resources: dict[str, int], resource: str | None, perm: int) -> None:
    if resource is None:
        return  # RocketMQ ignores null resources
    resources[resource] = resources.get(resource, 0) | perm


def needed_resources(request: RemotingCommand) -> dict[str, int]:
    """{resource: perm bits} the request needs; raises AclError if its body cannot be read."""
    code = request.code
    ext: Mapping[str, str] = request.ext_fields
    resources: dict[str, int] = {}
    if code in _V2_SENDS:
        _send(resources, ext.get("b"), ext.get("a"))
    elif code in _V1_SENDS:
        _send(resources, ext.get("topic"), ext.get("group"))
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        group = ext.get("group")
        _add(resources, None if group is None else retry_topic(group), SUB)
    elif code == RequestCode.PULL_MESSAGE:
        _add(resources, ext.get("topic"), SUB)
        group = ext.get("consumerGroup")
        _add(resources, None if group is None else retry_topic(group), SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        _add(resources, ext.get("topic"), SUB)
    elif code == RequestCode.HEART_BEAT:
        try:
            heartbeat = HeartbeatData.from_json(request.body_bytes())
        except Exception as exc:
            raise AclError(f"cannot read the heartbeat body: {exc}") from None
        for consumer in heartbeat.consumer_data_set:
            _add(resources, retry_topic(consumer.group_name), SUB)
            for subscription in consumer.subscription_data_set:
                _add(resources, subscription.topic, SUB)
    elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        group = ext.get("consumerGroup")
        _add(resources, None if group is None else retry_topic(group), SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        group = ext.get("consumerGroup")
        _add(resources, None if group is None else retry_topic(group), SUB)
        _add(resources, ext.get("topic"), SUB)
    return resources
