"""The `orbitmq` Spark data source: batch (`spark.read`) and Structured Streaming (`spark.readStream`)
reads of topics; the writers are in `orbitmq.spark.sink`.

Offsets in Spark's checkpoint are the truth. The DataSource, readers and partitions are pickled, so
none holds a connection: the driver's stream reader opens its `BrokerAccess` on first use.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from orbitmq.spark.arrow_records import ARROW_SCHEMA, ROW_DDL
from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.spark.cluster_view import ClusterView
from orbitmq.spark.offsets import OffsetMap, QueueRef, from_offset_json, to_offset_json
from orbitmq.spark.options import SourceOptions, parse_sink_options, parse_source_options
from orbitmq.spark.planning import (
    QueueRange,
    cap_to_target,
    check_data_loss,
    plan_ranges,
    rate_limit,
    split_ranges,
)
from orbitmq.spark.range_reader import RangeSpec, read_range

log = logging.getLogger("orbitmq.spark")

ROW_FIELDS = tuple(ARROW_SCHEMA.names)


class QueuePartition(InputPartition):
    """One Spark task: a `RangeSpec` (queue, `[start, end)`, broker address, pull settings)."""

    def __init__(self, spec: RangeSpec) -> None:
        super().__init__(spec)


def _check_schema(schema: StructType | None) -> None:
    if schema is not None and tuple(schema.fieldNames()) != ROW_FIELDS:
        raise ValueError(
            f"the orbitmq source has a fixed schema ({ROW_DDL}); do not pass .schema(...), "
            "select the columns you need instead"
        )


def _read(partition: InputPartition) -> Iterator[pa.RecordBatch]:
    spec = partition.value
    if not isinstance(spec, RangeSpec):  # Spark's stand-in partition when there was nothing to read
        return iter(())
    return read_range(spec)


class OrbitDataSource(DataSource):
    """`format("orbitmq")`: read topics as rows, write rows as messages."""

    @classmethod
    def name(cls) -> str:
        return "orbitmq"

    def schema(self) -> str:
        return ROW_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        _check_schema(schema)
        return OrbitBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        _check_schema(schema)
        return OrbitStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from orbitmq.spark.sink import OrbitBatchWriter

        return OrbitBatchWriter(parse_sink_options(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from orbitmq.spark.sink import OrbitStreamWriter

        return OrbitStreamWriter(parse_sink_options(self.options), schema)


class OrbitBatchReader(DataSourceReader):
    """A bounded read: `[startingOffsets, endingOffsets)` of every queue, fixed at planning."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        access = BrokerAccess(
            opts.namesrv, timeout_s=opts.pull_timeout_ms / 1000, credentials=opts.credentials
        )
        try:
            view = ClusterView(opts, access)
            view.refresh(require_topics=True)
            mins, maxs = view.min_max()
            start = view.positions(opts.starting, mins, maxs)
            # An end beyond what the queue holds means "up to what there is" (the range is fixed now).
            end = {q: min(o, maxs[q]) for q, o in view.positions(opts.ending, mins, maxs).items()}
            start, problems = check_data_loss(start, mins, maxs, fail=opts.fail_on_data_loss)
            for problem in problems:
                log.warning("%s (failOnDataLoss=false)", problem)
            ranges = split_ranges(plan_ranges(start, end), opts.min_partitions)
            return [QueuePartition(view.range_spec(r)) for r in ranges]
        finally:
            access.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)


class OrbitStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over queue offsets, with admission control and availableNow support.

    No consumer group is needed; with the option `consumerGroup`, `commit()` also reports the committed
    offsets to that group on the brokers so `consumerProgress` shows the query's lag (a monitoring hint
    only: Spark commits lazily, one trigger late, and never reads it back).
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._access: BrokerAccess | None = None
        self._view: ClusterView | None = None
        self._target: OffsetMap | None = None
        self._seen: OffsetMap | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get a pickled copy: it must not carry the driver's connections.
        return {"options": self.options, "_access": None, "_view": None, "_target": None, "_seen": None}

    @property
    def view(self) -> ClusterView:
        if self._view is None:
            opts = self.options
            self._access = BrokerAccess(
                opts.namesrv, timeout_s=opts.pull_timeout_ms / 1000, credentials=opts.credentials
            )
            self._view = ClusterView(opts, self._access)
        return self._view

    def _latest(self) -> tuple[OffsetMap, OffsetMap]:
        view = self.view
        view.refresh(require_topics=False)
        return view.min_max()

    def initialOffset(self) -> dict[str, Any]:
        mins, maxs = self._latest()
        return to_offset_json(self.view.positions(self.options.starting, mins, maxs))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()[1]

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """What the queues held at the last trigger (Spark shows it as the source's latestOffset)."""
        return None if self._seen is None else to_offset_json(self._seen)

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        begin = from_offset_json(start or {})
        mins, maxs = self._latest()
        self._seen = maxs
        # Queues that went backwards were recreated or truncated: report now (or read them from the
        # start of their new content, outside the rate limit).
        reset = {q: maxs[q] for q in begin if q in maxs and maxs[q] < begin[q]}
        if reset:
            check_data_loss({q: begin[q] for q in reset}, mins, maxs, fail=self.options.fail_on_data_loss)
        growing = {q: o for q, o in maxs.items() if q not in reset}
        if self._target is not None:
            growing = cap_to_target(growing, begin, self._target)
        if isinstance(limit, ReadMaxRows):
            growing = rate_limit(begin, growing, limit.max_rows)
        end: OffsetMap = dict(begin)  # queues we cannot see right now keep their position
        for queue, offset in growing.items():
            end[queue] = max(offset, begin.get(queue, 0))
        end.update(reset)
        return to_offset_json(end)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = from_offset_json(start)
        finish = from_offset_json(end)
        if begin == finish:
            return []
        view = self.view
        if not view.addresses or any(q.broker not in view.addresses for q in finish):
            view.refresh(require_topics=False)
        changed = [q for q in finish if finish[q] != begin.get(q, 0)]
        mins, maxs = view.min_max([q for q in changed if q.broker in view.addresses])
        starts: OffsetMap = {}
        for queue in changed:
            first = begin.get(queue, 0)  # a queue new since the last batch is read from its beginning
            if finish[queue] < first:  # recreated: its new content, from the earliest offset
                first = mins.get(queue, 0)
            starts[queue] = first
        starts, problems = check_data_loss(
            starts,
            mins,
            {q: max(maxs.get(q, 0), finish[q]) for q in maxs},
            fail=self.options.fail_on_data_loss,
        )
        for problem in problems:
            log.warning("%s (failOnDataLoss=false)", problem)
        ranges: list[QueueRange] = []
        for r in plan_ranges(starts, {q: finish[q] for q in changed}):
            if r.queue.broker not in view.addresses:
                raise RuntimeError(
                    f"broker {r.queue.broker} of queue {r.queue} is not in the topic route now"
                )
            ranges.append(r)
        return [QueuePartition(view.range_spec(r)) for r in split_ranges(ranges, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        group = self.options.consumer_group
        if group is None:
            return
        offsets = from_offset_json(end)
        try:
            view = self.view
            if not view.addresses:
                view.refresh(require_topics=False)
            view.access.update_consumer_offsets(group, view.addresses, offsets)
        except Exception as exc:  # progress reporting must never fail the query
            log.warning("could not report progress to consumer group %s: %s", group, exc)

    def stop(self) -> None:
        if self._access is not None:
            self._access.close()
        self._access = None
        self._view = None


def queue_offsets(end: dict[str, Any]) -> dict[QueueRef, int]:
    """A checkpointed offset (as Spark stores it) as a flat map: for tools and tests."""
    return from_offset_json(end)
