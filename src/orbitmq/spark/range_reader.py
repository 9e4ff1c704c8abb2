"""Reading one queue range `[start, end)` into Arrow batches: what a Spark task does on an executor.

The partition carries everything the task needs, so the executor knows nothing learned on the driver
after planning. A replayed range reads exactly the same records unless retention removed some; data
loss fails the task (`DataLossError`) or, with `failOnDataLoss=false`, is logged and skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import struct
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from orbitmq.common.errors import BrokerError, ConnectError, RequestTimeoutError
from orbitmq.protocol.codes import ResponseCode
from orbitmq.spark.arrow_records import decode_batch, record_positions, record_starts
from orbitmq.spark.broker_access import BrokerAccess, PullResponse, shared_access
from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.planning import DataLossError

log = logging.getLogger("orbitmq.spark")

TARGET_BATCH_BYTES = 16 * 1024 * 1024
TARGET_BATCH_ROWS = 65536
# A window is one pull's worth of offsets (`pullBatchSize`). A broker that returns fewer messages per
# pull (RocketMQ's default limit is 32 / 256 KiB) is asked again within the window, so `pullConcurrency`
# pulls stay in flight per task whatever the broker's limits are.
WINDOW_PULLS = 1
MAX_EMPTY_RETRIES = 5
# Pulled records waiting for the task to take them (the pulls run ahead of decoding and of Spark).
PREFETCH_BYTES = 2 * TARGET_BATCH_BYTES
_QUEUE_OFFSET = struct.Struct(">q")
Chunk = bytes | memoryview  # a pull's records: a view into the response frame, joined per batch


@dataclass(frozen=True, slots=True)
class RangeSpec:
    """Everything needed to read one range; plain values, pickled to the executor."""

    topic: str
    broker: str
    queue_id: int
    start: int
    end: int
    address: str
    namesrv: tuple[str, ...]
    group: str
    tags: str
    pull_batch_size: int
    pull_timeout_ms: int
    pull_concurrency: int
    fail_on_data_loss: bool
    credentials: tuple[str, str] | None = None
    expression_type: str = "TAG"  # "SQL92": `tags` holds the sqlFilter selector

    @property
    def queue(self) -> QueueRef:
        return QueueRef(self.topic, self.broker, self.queue_id)


def _lost(spec: RangeSpec, low: int, high: int, why: str) -> None:
    message = (
        f"queue {spec.queue}: offsets [{low}, {high}) of the planned range [{spec.start}, {spec.end}) "
        f"are no longer on broker {spec.address} ({why})"
    )
    if spec.fail_on_data_loss:
        raise DataLossError(
            message + ". Set the option failOnDataLoss to false to skip missing data instead of failing."
        )
    log.warning("%s; skipped (failOnDataLoss=false)", message)


def _cut_at(body: Chunk, high: int) -> Chunk:
    """The records of `body` whose queue offset is below `high` (offsets ascend in a pull body)."""
    for pos in record_positions(body):
        if _QUEUE_OFFSET.unpack_from(body, pos + 20)[0] >= high:
            return body[:pos]
    return body


class _RangeFetcher:
    def __init__(self, access: BrokerAccess, spec: RangeSpec) -> None:
        self.access = access
        self.spec = spec
        self.address = spec.address
        self.filtered = spec.expression_type != "TAG" or spec.tags.strip() not in ("", "*")

    async def _pull(self, offset: int, count: int) -> PullResponse:
        try:
            return await self._pull_from(self.address, offset, count)
        except (ConnectError, RequestTimeoutError):
            # The broker may have moved (restart on a new address): ask the name server once.
            spec = self.spec
            route = await self.access.api.get_topic_route(spec.topic)
            if route is None:
                raise
            for broker in route.broker_datas:
                if broker.broker_name == spec.broker and broker.broker_addrs:
                    addrs = {int(k): v for k, v in broker.broker_addrs.items()}
                    self.address = addrs.get(0) or addrs[min(addrs)]
            return await self._pull_from(self.address, offset, count)

    async def _pull_from(self, address: str, offset: int, count: int) -> PullResponse:
        spec = self.spec
        return await self.access.pull_raw(
            address,
            spec.queue,
            offset,
            count,
            group=spec.group,
            tags=spec.tags,
            expression_type=spec.expression_type,
            timeout_s=spec.pull_timeout_ms / 1000,
        )

    async def window(self, low: int, high: int) -> list[Chunk]:
        """The raw records of offsets `[low, high)`, in order."""
        spec = self.spec
        chunks: list[Chunk] = []
        offset = low
        empty = 0
        while offset < high:
            resp = await self._pull(offset, min(spec.pull_batch_size, high - offset))
            code = resp.code
            next_offset = resp.next_begin_offset
            if code == ResponseCode.SUCCESS:
                body = resp.body
                if not body:
                    raise BrokerError(code, "pull found messages but sent no body", address=self.address)
                first = _QUEUE_OFFSET.unpack_from(body, 20)[0]
                if first > offset and not self.filtered:
                    _lost(spec, offset, min(first, high), "the first record returned starts later")
                if next_offset > high or self.filtered:
                    body = _cut_at(body, high)
                if body:
                    chunks.append(body)
                empty = 0
            elif code == ResponseCode.PULL_OFFSET_MOVED:
                min_offset = resp.min_offset
                if offset < min_offset:
                    _lost(spec, offset, min(min_offset, high), "removed by retention")
                    next_offset = min_offset
                else:
                    _lost(spec, offset, high, "the queue ends before the range does; recreated or truncated")
                    next_offset = high
            elif code == ResponseCode.PULL_NOT_FOUND:
                if next_offset <= offset:
                    _lost(spec, offset, high, "the queue ends before the range does; recreated or truncated")
                    next_offset = high
                else:
                    _lost(spec, offset, min(next_offset, high), "the consume queue has a gap")
            elif code == ResponseCode.PULL_RETRY_IMMEDIATELY:
                pass  # filtered out by tags, or being removed: continue at next_offset
            else:
                raise BrokerError(code, resp.remark, address=self.address)
            if next_offset <= offset:
                empty += 1
                if empty > MAX_EMPTY_RETRIES:
                    raise BrokerError(
                        code,
                        f"pull of {spec.queue} at offset {offset} makes no progress (next {next_offset})",
                        address=self.address,
                    )
                await asyncio.sleep(0.05 * empty)
                continue
            offset = next_offset
        return chunks


class _Prefetcher:
    """Runs a range's pulls on a background thread, so they continue while the task decodes and
    while Spark consumes the batches already yielded (a Python worker otherwise pulls only between
    batches). Windows of offsets are pulled `pull_concurrency` at a time and handed over in offset
    order through a queue; at most about `max_bytes` of pulled records wait there unconsumed.
    """

    def __init__(self, access: BrokerAccess, spec: RangeSpec, max_bytes: int) -> None:
        self.access = access
        self.spec = spec
        self.max_bytes = max_bytes
        self.fetcher = _RangeFetcher(access, spec)
        window = spec.pull_batch_size * WINDOW_PULLS
        self.bounds = [(low, min(low + window, spec.end)) for low in range(spec.start, spec.end, window)]
        self.results: queue.SimpleQueue[tuple[int, list[Chunk]] | BaseException | None] = queue.SimpleQueue()
        self.waiting = 0  # bytes handed over but not yet consumed; only touched on the loop's thread
        self.space: asyncio.Event | None = None
        self.task: asyncio.Task[None] | None = None
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name=f"orbitmq-pull-{spec.queue}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.access.run(self._produce())
        except BaseException as exc:  # handed to the consuming thread, which raises it
            self.results.put(exc)
        finally:
            self.results.put(None)

    async def _produce(self) -> None:
        self.task = asyncio.current_task()
        self.space = asyncio.Event()
        loop = asyncio.get_running_loop()
        pending: deque[asyncio.Task[list[Chunk]]] = deque()
        next_window = 0
        bounds = self.bounds
        concurrency = max(1, self.spec.pull_concurrency)
        try:
            while (pending or next_window < len(bounds)) and not self.stopping:
                while next_window < len(bounds) and len(pending) < concurrency:
                    pending.append(loop.create_task(self.fetcher.window(*bounds[next_window])))
                    next_window += 1
                low, high = bounds[next_window - len(pending)]
                chunks = await pending.popleft()
                size = sum(len(c) for c in chunks)
                self.waiting += size
                self.results.put((high - low, chunks))
                while self.waiting > self.max_bytes and not self.stopping:
                    self.space.clear()
                    await self.space.wait()
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    def _consumed(self, size: int) -> None:
        self.waiting -= size
        if self.space is not None:
            self.space.set()

    def consumed(self, size: int) -> None:
        """The consumer has taken `size` bytes out (called from the consuming thread)."""
        self.access.loop.call_soon_threadsafe(self._consumed, size)

    def stop(self) -> None:
        if self.thread.is_alive():
            self.stopping = True

            def wake() -> None:
                if self.space is not None:
                    self.space.set()
                if self.task is not None:
                    self.task.cancel()

            with contextlib.suppress(RuntimeError):  # the loop already finished
                self.access.loop.call_soon_threadsafe(wake)
        self.thread.join()


def read_range(spec: RangeSpec) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the range's messages, in offset order (a generator, run inside a Spark task).

    Pulls are pipelined: the range is cut into windows of a few pull batches, `pullConcurrency` of them
    in flight on the reader loop's background thread (`_Prefetcher`), so pulling continues while the task
    decodes and while Spark takes the batches already yielded. Results come in offset order, decoded in
    batches of up to `TARGET_BATCH_BYTES` / `TARGET_BATCH_ROWS`; at most about `PREFETCH_BYTES` wait.
    """
    if spec.end <= spec.start:
        return
    access = shared_access(
        spec.namesrv, spec.pull_timeout_ms / 1000, role="read", credentials=spec.credentials
    )
    prefetch = _Prefetcher(access, spec, PREFETCH_BYTES)
    prefetch.start()
    buffered: list[Chunk] = []
    buffered_bytes = 0
    buffered_estimate = 0
    try:
        while True:
            item = prefetch.results.get()
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            offsets, chunks = item
            size = sum(len(c) for c in chunks)
            prefetch.consumed(size)
            buffered_estimate += offsets  # at most this many rows (fewer with a tag filter)
            buffered += chunks
            buffered_bytes += size
            if buffered_bytes >= TARGET_BATCH_BYTES or buffered_estimate >= TARGET_BATCH_ROWS:
                yield _decode(buffered, spec)
                buffered, buffered_bytes, buffered_estimate = [], 0, 0
        if buffered:
            yield _decode(buffered, spec)
    finally:
        prefetch.stop()


def tag_set(expression: str) -> frozenset[str] | None:
    """The tags of a TAG subscription expression ("A || B"); None for "*" (everything)."""
    tags = frozenset(t.strip() for t in expression.split("||") if t.strip())
    return None if not tags or "*" in tags else tags


def _decode(chunks: list[Chunk], spec: RangeSpec) -> pa.RecordBatch:
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    batch = decode_batch(data, record_starts(data), broker=spec.broker)
    tags = tag_set(spec.tags) if spec.expression_type == "TAG" else None
    if tags is not None:
        # The broker filters by tag hash code; equal hashes of different tags are dropped here, as
        # RocketMQ's clients re-check the tag string after a pull.
        batch = batch.filter(
            pc.fill_null(pc.is_in(batch.column("tags"), value_set=pa.array(sorted(tags))), False)
        )
    return batch
