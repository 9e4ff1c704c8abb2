"""The values AdminClient returns besides protocol bodies: one row per queue, broker or message.

Pure values with a `to_json()` giving plain JSON-able dicts (what `orbitmq admin ... --json` prints).
No I/O, no formatting for humans (that is `orbitmq.admin.table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orbitmq.message.model import MessageExt


@dataclass(slots=True, frozen=True)
class BrokerEntry:
    """One broker as the name server knows it (clusterList, broker resolution)."""

    cluster: str
    broker_name: str
    broker_id: int
    address: str

    @property
    def is_master(self) -> bool:
        return self.broker_id == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "brokerName": self.broker_name,
            "brokerId": self.broker_id,
            "address": self.address,
        }


@dataclass(slots=True, frozen=True)
class QueueStatus:
    """One queue of topicStatus: offsets range and the store time of its last message."""

    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_update_timestamp: int

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "queueId": self.queue_id,
            "minOffset": self.min_offset,
            "maxOffset": self.max_offset,
            "lastUpdateTimestamp": self.last_update_timestamp,
        }


@dataclass(slots=True, frozen=True)
class QueueProgress:
    """One queue of consumerProgress: how far the group is behind the broker."""

    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    last_timestamp: int
    client_ip: str = ""

    @property
    def diff(self) -> int:
        return self.broker_offset - self.consumer_offset

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "brokerName": self.broker_name,
            "queueId": self.queue_id,
            "brokerOffset": self.broker_offset,
            "consumerOffset": self.consumer_offset,
            "diff": self.diff,
            "lastTimestamp": self.last_timestamp,
            "clientIp": self.client_ip,
        }


@dataclass(slots=True)
class ConsumerProgress:
    """consumerProgress of one group: the queues (sorted) and the totals."""

    group: str
    queues: list[QueueProgress]
    consume_tps: float = 0.0

    @property
    def diff_total(self) -> int:
        return sum(q.diff for q in self.queues)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "queues": [q.to_json() for q in self.queues],
            "consumeTps": self.consume_tps,
            "diffTotal": self.diff_total,
        }


@dataclass(slots=True, frozen=True)
class ResetOffsetEntry:
    broker_name: str
    queue_id: int
    offset: int

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "offset": self.offset}


def message_to_json(msg: MessageExt, broker_name: str | None = None) -> dict[str, Any]:
    """A stored message as JSON: every header field, properties, and the body as UTF-8 text
    (undecodable bytes replaced) plus its length."""
    out: dict[str, Any] = {
        "msgId": msg.msg_id,
        "offsetMsgId": msg.offset_msg_id,
        "topic": msg.topic,
        "tags": msg.tags,
        "keys": msg.keys,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset,
        "reconsumeTimes": msg.reconsume_times,
        "bornTimestamp": msg.born_timestamp,
        "storeTimestamp": msg.store_timestamp,
        "bornHost": msg.born_host,
        "storeHost": msg.store_host,
        "sysFlag": msg.sys_flag,
        "bodyCRC": msg.body_crc,
        "storeSize": msg.store_size,
        "properties": dict(msg.properties),
        "bodyLength": len(msg.body),
        "body": bytes(msg.body).decode("utf-8", errors="replace"),
    }
    if broker_name is not None:
        out["brokerName"] = broker_name
    return out
