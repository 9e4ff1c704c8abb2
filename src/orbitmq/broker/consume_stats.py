"""ConsumeStats of one group: the one builder behind GET_CONSUME_STATS (`mqadmin consumerProgress`)
and GET_BROKER_CONSUME_STATS (`brokerConsumeStats`: every group's, with the total diff).

Per topic and queue: max offset, committed offset, last consumed store time, and the group's consume
TPS, under 4.9.8 AdminBrokerProcessor's rules (`ConsumeStatsBuilder.build`); body: fact sheet 4.7.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from orbitmq.broker.client_registry import ConsumerRegistry
    from orbitmq.broker.consumer_offsets import ConsumerOffsetManager
    from orbitmq.broker.stats import BrokerStats
    from orbitmq.broker.topics import TopicConfigManager
    from orbitmq.store.message_store import MessageStore


def mq_key(topic: str, broker_name: str, queue_id: int) -> bytes:
    return orjson.dumps({"brokerName": broker_name, "queueId": queue_id, "topic": topic})


def object_key_map(entries: Iterable[tuple[bytes, Any]]) -> bytes:
    """A JSON-like map whose keys are JSON objects, as fastjson writes Map<MessageQueue, V>."""
    return b"{" + b",".join(k + b":" + orjson.dumps(v) for k, v in entries) + b"}"


@dataclass(slots=True)
class GroupStats:
    """One ConsumeStats: its JSON body, computeTotalDiff() (broker offset - consumer offset, summed) and
    how many of the asked topics it covers (the others were skipped by the rules above)."""

    body: bytes
    total_diff: int
    topics: int


@dataclass(slots=True)
class ConsumeStatsBuilder:
    topics: TopicConfigManager
    offsets: ConsumerOffsetManager
    store: MessageStore
    stats: BrokerStats
    consumers: ConsumerRegistry
    broker_name: str

    def group_topics(self, group: str) -> list[str]:
        return sorted(self.offsets.topics_of_group(group))

    def build(
        self,
        group: str,
        topics: Iterable[str],
        *,
        tps_topic: str | None = None,
        write_queues: bool = False,
        order_only: bool = False,
    ) -> GroupStats:
        """208 counts each topic's read queues, 317 its write queues (as 4.9.8 does); `order_only`
        keeps ordered topics only (317's isOrder). `tps_topic` narrows the TPS to one topic (208 with
        a topic), else it is the group's over all its topics. As in 4.9.8: topics without a config
        are skipped, and so are topics an online group with subscriptions does not subscribe;
        negative offsets and a missing store time read as 0."""
        store = self.store
        online = self.consumers.get(group)
        subscribed = online.subscriptions if online is not None else {}
        entries: list[tuple[bytes, dict[str, int]]] = []
        total_diff = covered = 0
        for topic in topics:
            tc = self.topics.select(topic)
            if tc is None or (order_only and not tc.order):
                continue
            if subscribed and topic not in subscribed:
                continue
            covered += 1
            for q in range(tc.write_queue_nums if write_queues else tc.read_queue_nums):
                broker_offset = max(store.get_max_offset_in_queue(topic, q), 0)
                consumer_offset = max(self.offsets.query_offset(group, topic, q), 0)
                last = 0
                if consumer_offset > 0:
                    last = max(store.get_message_store_timestamp(topic, q, consumer_offset - 1), 0)
                total_diff += broker_offset - consumer_offset
                entries.append(
                    (
                        mq_key(topic, self.broker_name, q),
                        {
                            "brokerOffset": broker_offset,
                            "consumerOffset": consumer_offset,
                            "lastTimestamp": last,
                        },
                    )
                )
        tps = self.stats.consume_tps(group, tps_topic)
        body = (
            b'{"consumeTps":'
            + orjson.dumps(round(tps, 4))
            + b',"offsetTable":'
            + object_key_map(entries)
            + b"}"
        )
        return GroupStats(body, total_diff, covered)

    def broker_consume_stats(self, groups: Iterable[str], broker_addr: str, *, order_only: bool) -> bytes:
        """ConsumeStatsList: `{"brokerAddr":..,"consumeStatsList":[{group:[ConsumeStats per topic]}],
        "totalDiff":..}`; one ConsumeStats per topic, each with that topic's TPS."""
        parts: list[bytes] = []
        total_diff = 0
        for group in groups:
            per_topic: list[bytes] = []
            for topic in self.group_topics(group):
                one = self.build(group, [topic], tps_topic=topic, write_queues=True, order_only=order_only)
                if not one.topics:
                    continue
                per_topic.append(one.body)
                total_diff += one.total_diff
            parts.append(b"{" + orjson.dumps(group) + b":[" + b",".join(per_topic) + b"]}")
        return (
            b'{"brokerAddr":'
            + orjson.dumps(broker_addr)
            + b',"consumeStatsList":['
            + b",".join(parts)
            + b'],"totalDiff":'
            + str(total_diff).encode()
            + b"}"
        )
