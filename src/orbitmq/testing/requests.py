"""Ext fields of the raw requests that tests and the smoke bench send to a broker.

The keys are RocketMQ's wire names (fact sheet 3.3, 3.5); sends use the client's own
`orbitmq.client.send_request.send_header_v2`.
"""

from __future__ import annotations

import time

from orbitmq.broker.processors.send_request import V2_TO_V1
from orbitmq.client.send_request import send_header_v2


def send_ext(
    topic: str,
    *,
    group: str = "pg",
    queue_id: int = 0,
    properties: str = "",
    born_timestamp: int | None = None,
    batch: bool = False,
) -> dict[str, str]:
    """SEND_MESSAGE_V2 (short names) as the client writes it; `born_timestamp` defaults to now."""
    return send_header_v2(
        group=group,
        topic=topic,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000) if born_timestamp is None else born_timestamp,
        flag=0,
        properties=properties,
        broker_name="",
        batch=batch,
    )


def long_names(ext_v2: dict[str, str]) -> dict[str, str]:
    """The same send header under SEND_MESSAGE's long names."""
    return {V2_TO_V1[key]: value for key, value in ext_v2.items()}


def create_topic_ext(topic: str, queues: int = 4, perm: int = 6) -> dict[str, str]:
    """UPDATE_AND_CREATE_TOPIC: `queues` read and write queues, tag filtering, not ordered."""
    return {
        "topic": topic,
        "readQueueNums": str(queues),
        "writeQueueNums": str(queues),
        "perm": str(perm),
        "defaultTopic": "TBW102",
        "topicFilterType": "SINGLE_TAG",
        "order": "false",
    }


def pull_ext(
    group: str,
    topic: str,
    queue_id: int,
    offset: int,
    *,
    max_nums: int = 32,
    sys_flag: int = 4,
    suspend_ms: int = 0,
    subscription: str | None = "*",
) -> dict[str, str]:
    """PULL_MESSAGE without an offset commit; `subscription` None leaves the field out."""
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": str(max_nums),
        "sysFlag": str(sys_flag),
        "commitOffset": "0",
        "suspendTimeoutMillis": str(suspend_ms),
        "subVersion": "0",
    }
    if subscription is not None:
        ext["subscription"] = subscription
    return ext
