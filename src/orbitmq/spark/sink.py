"""The `orbitmq` Spark sink: rows to messages, sent as SEND_BATCH_MESSAGE from Arrow batches.

Each Arrow batch is encoded a column at a time (sink_entries.py) and each queue's rows leave as slices
of one buffer; a feeder thread takes the next batch from Spark meanwhile. At least once: a retried task
resends its rows with the same message ids (`message_id`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import struct
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import ArrayType, BinaryType, MapType, StringType, StructType

from orbitmq.common.errors import BrokerError, ConnectError, RequestTimeoutError
from orbitmq.message import properties as P
from orbitmq.message.hashing import java_string_hash
from orbitmq.message.property_string import encode_properties
from orbitmq.protocol.codes import ResponseCode
from orbitmq.spark.broker_access import BrokerAccess, TopicQueues, shared_access
from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.options import SinkOptions
from orbitmq.spark.sink_entries import encode_entries, queue_plan

log = logging.getLogger("orbitmq.spark")

SINK_COLUMNS = ("body", "topic", "tags", "keys", "properties", "sharding_key")
MAX_BATCH_BYTES = 3 * 1024 * 1024  # under the broker's 4 MiB maxMessageSize for a whole batch body
SEND_RETRIES = 2
MAX_SEND_PARTS = 16
MIN_RUN = 64  # average rows per queue run below which a batch's entries are sorted by queue
_STORED = {
    ResponseCode.SUCCESS,
    ResponseCode.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE,
}
_ENTRY_HEAD = struct.Struct(">iiiii")
_SHORT = struct.Struct(">h")


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Refuse a schema the sink cannot write, naming the column. Only `body` is required; any other
    column is an error, to catch typos:
      body binary|string, topic string (or the `topic` option, which wins), tags string,
      keys string (space-separated) | array<string>, properties map<string,string>,
      sharding_key string: rows with the same key go to the same queue (Java's String.hashCode modulo
      the topic's write queues, as RocketMQ's SelectMessageQueueByHash), so they stay in order; rows
      without a key are spread over the queues in runs of `maxBatchMessages`.
    """
    names = schema.fieldNames()
    unknown = [n for n in names if n not in SINK_COLUMNS]
    if unknown:
        raise ValueError(
            f"the orbitmq sink does not know the column(s) {unknown}; columns are {', '.join(SINK_COLUMNS)}"
        )
    if "body" not in names:
        raise ValueError("the orbitmq sink needs a 'body' column (binary or string)")
    if "topic" not in names and options.topic is None:
        raise ValueError("set the option 'topic' or give a 'topic' column")
    types = {f.name: f.dataType for f in schema.fields}
    if not isinstance(types["body"], BinaryType | StringType):
        raise ValueError(f"column 'body' must be binary or string, not {types['body'].simpleString()}")
    for name in ("topic", "tags", "sharding_key"):
        if name in types and not isinstance(types[name], StringType):
            raise ValueError(f"column {name!r} must be a string, not {types[name].simpleString()}")
    if "keys" in types and not (
        isinstance(types["keys"], StringType)
        or (isinstance(types["keys"], ArrayType) and isinstance(types["keys"].elementType, StringType))
    ):
        raise ValueError("column 'keys' must be a string (space-separated) or array<string>")
    if "properties" in types and not (
        isinstance(types["properties"], MapType)
        and isinstance(types["properties"].keyType, StringType)
        and isinstance(types["properties"].valueType, StringType)
    ):
        raise ValueError("column 'properties' must be map<string,string>")


def message_id(prefix: bytes, row: int) -> str:
    """A UNIQ_KEY-shaped id (32 uppercase hex chars): 10 bytes of the task's prefix + 6 of the row.

    The prefix comes from (write id, Spark partition), the write id being the streaming query id + batch
    id, or for a batch write the `writeId` option (random per write when not set): a retried task or a
    replayed micro-batch sends its rows again with the SAME ids, so a consumer that remembers recent ids
    can drop the duplicates. There is no exactly-once (the broker has no producer sequence).
    """
    return (prefix + row.to_bytes(6, "big")).hex().upper()


def id_prefix(write_key: str, partition: int) -> bytes:
    return hashlib.blake2b(f"{write_key}|{partition}".encode(), digest_size=10).digest()


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    partition: int
    messages: int
    batches: int
    write_key: str


@dataclass
class _Batch:
    queue: QueueRef
    address: str
    parts: list[bytes | memoryview]
    size: int = 0
    count: int = 0


class _TaskSender:
    """Sends one task's rows: groups them per queue into batch bodies, `sendConcurrency` sends in flight.

    Only a batch with a null body takes the row-by-row path (it names the row). `write()` returns only
    after the broker acknowledged every message of the task (failed sends are retried).
    """

    def __init__(self, options: SinkOptions, access: BrokerAccess, prefix: bytes) -> None:
        self.options = options
        self.access = access
        self.prefix = prefix
        self.routes: dict[str, TopicQueues] = {}
        self.writable: dict[str, list[QueueRef]] = {}
        self.row = 0
        self.sent_messages = 0
        self.sent_batches = 0
        self.open: dict[QueueRef, _Batch] = {}
        self.inflight: set[asyncio.Task[None]] = set()
        self.spread = 0

    async def _route(self, topic: str) -> TopicQueues:
        route = self.routes.get(topic)
        if route is None:
            found = await self.access.topic_queues_async([topic])
            if topic not in found or not found[topic].writable():
                raise ValueError(
                    f"topic {topic!r} has no writable queue; create it first (orbitmq admin updateTopic)"
                )
            route = self.routes[topic] = found[topic]
        return route

    async def _send(self, batch: _Batch) -> None:
        opts = self.options
        header = {
            "a": opts.producer_group,
            "b": batch.queue.topic,
            "c": "TBW102",
            "d": "4",
            "e": str(batch.queue.queue_id),
            "f": "0",
            "g": str(int(time.time() * 1000)),
            "h": "0",
            "i": "",
            "j": "0",
            "k": "false",
            "m": "true",
            "n": batch.queue.broker,
        }
        # A few large parts (runs of ready entries) go to the socket as they are; the row path's many
        # small pieces are joined first (one write each would cost a syscall each).
        body: bytes | list[bytes | memoryview] = (
            batch.parts if len(batch.parts) <= MAX_SEND_PARTS else b"".join(batch.parts)
        )
        last: Exception | None = None
        for attempt in range(SEND_RETRIES + 1):
            try:
                resp = await self.access.send_batch_raw(
                    batch.address, header, body, opts.send_timeout_ms / 1000
                )
                if resp.code in _STORED:
                    self.sent_messages += batch.count
                    self.sent_batches += 1
                    return
                last = BrokerError(resp.code, resp.remark, address=batch.address)
                if resp.code not in (
                    ResponseCode.SYSTEM_BUSY,
                    ResponseCode.SYSTEM_ERROR,
                    ResponseCode.SERVICE_NOT_AVAILABLE,
                ):
                    break
            except (ConnectError, RequestTimeoutError) as exc:
                last = exc
            await asyncio.sleep(0.1 * (attempt + 1))
        raise RuntimeError(f"sending {batch.count} messages to {batch.queue} failed: {last}") from last

    async def _dispatch(self, batch: _Batch) -> None:
        while len(self.inflight) >= self.options.send_concurrency:
            done, _ = await asyncio.wait(self.inflight, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                self.inflight.discard(task)
                task.result()
        task = asyncio.get_running_loop().create_task(self._send(batch))
        self.inflight.add(task)

    async def flush(self) -> None:
        for queue in list(self.open):
            await self._dispatch(self.open.pop(queue))
        while self.inflight:
            done, _ = await asyncio.wait(self.inflight, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                self.inflight.discard(task)
                task.result()

    async def add_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows and _columnar_ok(batch, self.options):
            await self._add_columnar(batch)
        else:
            await self._add_rows(batch)

    async def _add_columnar(self, batch: pa.RecordBatch) -> None:
        """Without Python per row: entries built into ONE buffer (`encode_entries`), the queue of every row
        computed per batch (`queue_plan`), then each queue's rows appended as runs of that buffer."""
        opts = self.options
        n = batch.num_rows
        if opts.topic is not None:
            topic_names, topic_of_row = [opts.topic], np.zeros(n, dtype=np.int64)
        else:
            encoded = pc.dictionary_encode(batch.column("topic"))
            topic_names = encoded.dictionary.to_pylist()
            topic_of_row = np.asarray(pc.fill_null(encoded.indices, -1), dtype=np.int64)
            empty = [i for i, t in enumerate(topic_names) if not t]
            missing = np.flatnonzero((topic_of_row < 0) | np.isin(topic_of_row, empty))
            if missing.size:
                raise ValueError(
                    f"row {self.row + int(missing[0])}: no topic (null 'topic' column and no 'topic' option)"
                )
        writables: list[list[QueueRef]] = []
        addresses: list[dict[str, str]] = []
        for topic in topic_names:
            route = self.routes.get(topic) or await self._route(topic)
            writable = self.writable.get(topic)
            if writable is None:
                writable = self.writable[topic] = route.writable()
            writables.append(writable)
            addresses.append(route.addresses)
        keys = batch.column("sharding_key") if "sharding_key" in batch.schema.names else None
        queue_of_row, self.spread = queue_plan(
            topic_of_row, [len(w) for w in writables], keys, self.spread, opts.max_batch_messages
        )
        entries = encode_entries(batch, self.prefix, self.row)
        self.row += n
        # One group per (topic, queue). Runs of one group are sent in row order, which keeps each
        # queue's rows in their order. Only when the runs are short (rows with sharding keys mixed
        # together) are the entries reordered by a stable sort, so each queue gets one run: that `take`
        # copies every entry, which long runs (spread rows change queue every maxBatchMessages) avoid.
        width = max(len(w) for w in writables)
        group = topic_of_row * width + queue_of_row
        changes = int(np.count_nonzero(group[1:] != group[:-1])) if n > 1 else 0
        if changes * MIN_RUN > n:
            order = np.argsort(group, kind="stable")
            entries = entries.take(pa.array(order))
            group = group[order]
        offsets = np.frombuffer(entries.buffers()[1], dtype=np.int32)[entries.offset : entries.offset + n + 1]
        data = memoryview(entries.buffers()[2])
        bounds = np.flatnonzero(np.diff(group)) + 1
        starts = [0, *bounds.tolist()]
        ends = [*bounds.tolist(), n]
        for first, end in zip(starts, ends, strict=True):
            t, q = divmod(int(group[first]), width)
            queue = writables[t][q]
            await self._append_run(queue, addresses[t][queue.broker], offsets, data, i=first, end=end)

    async def _append_run(
        self, queue: QueueRef, address: str, offsets: np.ndarray, data: memoryview, *, i: int, end: int
    ) -> None:
        """Entries [i, end) of one buffer into `queue`'s open batches (at most maxBatchMessages and
        MAX_BATCH_BYTES each): each batch gets slices of the buffer, never a copy."""
        per_batch = self.options.max_batch_messages
        while i < end:
            pending = self.open.get(queue)
            if pending is not None and (
                pending.count >= per_batch
                or pending.size + int(offsets[i + 1] - offsets[i]) > MAX_BATCH_BYTES
            ):
                await self._dispatch(self.open.pop(queue))
                pending = None
            if pending is None:
                pending = self.open[queue] = _Batch(queue, address, [])
            room = min(end - i, per_batch - pending.count)
            budget = int(offsets[i]) + MAX_BATCH_BYTES - pending.size
            fits = int(np.searchsorted(offsets, budget, side="right")) - 1 - i
            j = i + max(1, min(room, fits))
            pending.parts.append(data[int(offsets[i]) : int(offsets[j])])
            pending.size += int(offsets[j] - offsets[i])
            pending.count += j - i
            i = j

    async def _add_rows(self, batch: pa.RecordBatch) -> None:
        opts = self.options
        columns = batch.schema.names
        n = batch.num_rows
        body_col = batch.column("body")
        bodies = body_col.to_pylist() if pa.types.is_string(body_col.type) else None
        if bodies is not None:
            bodies = [b.encode() if b is not None else None for b in bodies]
        else:
            bodies = body_col.to_pylist()
        topics = [opts.topic] * n if opts.topic is not None else batch.column("topic").to_pylist()
        tags = batch.column("tags").to_pylist() if "tags" in columns else None
        keys = batch.column("keys").to_pylist() if "keys" in columns else None
        props = batch.column("properties").to_pylist() if "properties" in columns else None
        shard = batch.column("sharding_key").to_pylist() if "sharding_key" in columns else None
        for i in range(n):
            body = bodies[i]
            if body is None:
                raise ValueError(f"row {self.row}: column 'body' is null")
            topic = topics[i]
            if not topic:
                raise ValueError(f"row {self.row}: no topic (null 'topic' column and no 'topic' option)")
            route = self.routes.get(topic) or await self._route(topic)
            writable = self.writable.get(topic)
            if writable is None:
                writable = self.writable[topic] = route.writable()
            key = shard[i] if shard is not None else None
            if key is not None:
                queue = writable[abs(java_string_hash(key)) % len(writable)]
            else:
                queue = writable[(self.spread // opts.max_batch_messages) % len(writable)]
                self.spread += 1
            properties: dict[str, str | None] = {}
            if props is not None and props[i]:
                properties.update(props[i])
            if tags is not None and tags[i]:
                properties[P.TAGS] = tags[i]
            if keys is not None and keys[i]:
                properties[P.KEYS] = (
                    keys[i] if isinstance(keys[i], str) else " ".join(k for k in keys[i] if k)
                )
            properties[P.UNIQ_KEY] = message_id(self.prefix, self.row)
            encoded = encode_properties(properties).encode()
            self.row += 1
            entry_size = 22 + len(body) + len(encoded)
            pending = self.open.get(queue)
            if pending is not None and (
                pending.size + entry_size > MAX_BATCH_BYTES or pending.count >= opts.max_batch_messages
            ):
                await self._dispatch(self.open.pop(queue))
                pending = None
            if pending is None:
                pending = self.open[queue] = _Batch(queue, route.addresses[queue.broker], [])
            pending.parts += [
                _ENTRY_HEAD.pack(entry_size, 0, 0, 0, len(body)),
                body,
                _SHORT.pack(len(encoded)),
                encoded,
            ]
            pending.size += entry_size
            pending.count += 1


def _columnar_ok(batch: pa.RecordBatch, options: SinkOptions) -> bool:
    """Every batch but one with a null body (the row path reports which row)."""
    return not batch.column("body").null_count


def _write_task(options: SinkOptions, batches: Iterator[pa.RecordBatch], write_key: str) -> SinkCommitMessage:
    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    access = shared_access(options.namesrv, options.send_timeout_ms / 1000, credentials=options.credentials)
    sender = _TaskSender(options, access, id_prefix(write_key, partition))

    # Spark hands the task its Arrow batches through a blocking iterator (a socket read from the JVM).
    # Read on the loop's thread, every wait for the next batch would also stop the loop: in-flight
    # sends not written further, acks not read, so the JVM and the broker took turns instead of
    # overlapping. A feeder thread pulls the next batch while this one is encoded and sent; the
    # iterator is still driven by one thread at a time (each `next` starts after the previous ended).
    feeder = ThreadPoolExecutor(1, thread_name_prefix="orbitmq-sink-feed")
    source = iter(batches)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        upcoming = loop.run_in_executor(feeder, next, source, None)
        try:
            while (batch := await upcoming) is not None:
                upcoming = loop.run_in_executor(feeder, next, source, None)
                await sender.add_batch(batch)
            await sender.flush()
        finally:
            upcoming.cancel()  # after a failure: the feeder's outcome is no longer wanted
            for task in sender.inflight:
                task.cancel()

    try:
        access.run(run())
    finally:
        # A failed task returns only after the feeder stopped touching Spark's iterator.
        feeder.shutdown(wait=True)
    return SinkCommitMessage(partition, sender.sent_messages, sender.sent_batches, write_key)


def _stream_write_key(write_id: str | None) -> str:
    context = TaskContext.get()
    query = context.getLocalProperty("sql.streaming.queryId") if context is not None else None
    query = write_id or query
    batch = context.getLocalProperty("streaming.sql.batchId") if context is not None else None
    if query is None or batch is None:
        raise RuntimeError("the streaming sink ran outside a streaming query (no query id / batch id)")
    return f"{query}/{batch}"


class OrbitBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, options)
        self.options = options
        # Fixed at planning and pickled to every task, so a retried task reuses its message ids.
        self.write_key = options.write_id or uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return _write_task(self.options, iterator, self.write_key)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        sent = sum(m.messages for m in messages if isinstance(m, SinkCommitMessage))
        log.info("orbitmq sink: write %s sent %d messages", self.write_key, sent)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        sent = sum(m.messages for m in messages if isinstance(m, SinkCommitMessage))
        log.warning(
            "orbitmq sink: write %s aborted after %d messages were sent (they stay in the topic)",
            self.write_key,
            sent,
        )


class OrbitStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, options)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return _write_task(self.options, iterator, _stream_write_key(self.options.write_id))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        sent = sum(m.messages for m in messages if isinstance(m, SinkCommitMessage))
        log.info("orbitmq sink: batch %d sent %d messages", batchId, sent)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("orbitmq sink: batch %d aborted; messages already sent stay in the topic", batchId)
