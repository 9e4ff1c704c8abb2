"""The driver's view of the cluster for planning: which queues the query reads and their offsets.

Everything is asked fresh on each call, so new topics, queues and brokers are picked up at the next
micro-batch; executors get the results through the partitions.
"""

from __future__ import annotations

import logging

from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.spark.offsets import OffsetMap, QueueRef
from orbitmq.spark.options import OffsetSpec, SourceOptions
from orbitmq.spark.planning import QueueRange, resolve_position
from orbitmq.spark.range_reader import RangeSpec

log = logging.getLogger("orbitmq.spark")


class ClusterView:
    """For the source options: the topics (explicit, or matching `topicPattern`), their readable queues
    and each broker's address, min/max offsets, and a start or end position resolved from an option
    (earliest / latest / timestamp / JSON).
    """

    def __init__(self, options: SourceOptions, access: BrokerAccess) -> None:
        self.options = options
        self.access = access
        self.addresses: dict[str, str] = {}
        self.queues: list[QueueRef] = []

    def refresh(self, *, require_topics: bool) -> list[QueueRef]:
        """Reloads topics, queues and broker addresses; returns the readable queues in order."""
        opts = self.options
        topics = (
            list(opts.topics)
            if opts.topic_pattern is None
            else self.access.topics_matching(opts.topic_pattern)
        )
        routes = self.access.topic_queues(topics)
        missing = [t for t in topics if t not in routes]
        if missing and require_topics and opts.topic_pattern is None:
            raise ValueError(
                f"topic(s) {', '.join(missing)} not known to the name server {','.join(opts.namesrv)}; "
                "create them first (orbitmq admin updateTopic)"
            )
        if missing:
            log.warning("topic(s) %s not known to the name server yet; they are read once created", missing)
        addresses: dict[str, str] = {}
        queues: list[QueueRef] = []
        for topic in sorted(routes):
            addresses.update(routes[topic].addresses)
            queues += routes[topic].readable()
        self.addresses = addresses
        self.queues = sorted(queues)
        return self.queues

    def min_max(self, queues: list[QueueRef] | None = None) -> tuple[OffsetMap, OffsetMap]:
        return self.access.min_max_offsets(self.addresses, self.queues if queues is None else queues)

    def positions(self, spec: OffsetSpec, mins: OffsetMap, maxs: OffsetMap) -> OffsetMap:
        """`spec` resolved for every queue with known offsets."""
        known = [q for q in self.queues if q in mins and q in maxs]
        by_time: OffsetMap = {}
        if spec.kind == "timestamp":
            by_time = self.access.offsets_for_timestamp(self.addresses, known, spec.timestamp, mins, maxs)
        return {q: resolve_position(spec, q, mins[q], maxs[q], by_time.get(q)) for q in known}

    def range_spec(self, r: QueueRange) -> RangeSpec:
        opts = self.options
        return RangeSpec(
            topic=r.queue.topic,
            broker=r.queue.broker,
            queue_id=r.queue.queue_id,
            start=r.start,
            end=r.end,
            address=self.addresses[r.queue.broker],
            namesrv=opts.namesrv,
            group=opts.reader_group,
            tags=opts.sql_filter if opts.sql_filter is not None else opts.tags,
            expression_type="SQL92" if opts.sql_filter is not None else "TAG",
            pull_batch_size=opts.pull_batch_size,
            pull_timeout_ms=opts.pull_timeout_ms,
            pull_concurrency=opts.pull_concurrency,
            fail_on_data_loss=opts.fail_on_data_loss,
            credentials=opts.credentials,
        )
