"""What the Spark source and sink ask of the cluster, as blocking calls on a private event loop.

Spark calls a data source from plain threads (planners, the streaming runner, executor tasks), so each
process owns one asyncio loop running `MQClientAPI` coroutines, and one cached `BrokerAccess` per
process id: executors keep their broker connections between tasks, a forked child builds its own.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
from collections.abc import Awaitable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from orbitmq.client.api import MQClientAPI
from orbitmq.common.errors import BrokerError
from orbitmq.message.model import MessageQueue
from orbitmq.protocol import java_json
from orbitmq.protocol.bodies_core import MASTER_ID, ClusterInfo
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import Buffer, RemotingCommand
from orbitmq.protocol.perm import is_readable, is_writeable
from orbitmq.spark.offsets import QueueRef
from orbitmq.transport.client import RemotingClient
from orbitmq.transport.loop import fast_loop_factory
from orbitmq.transport.signing import request_signer

T = TypeVar("T")

FLAG_SUBSCRIPTION = 0x4
DEFAULT_GROUP = "orbitmq_spark_reader"
SETTLE_ITERATIONS = 3
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SELF_TEST_TOPIC",
        "BenchmarkTest",
        "OFFSET_MOVED_EVENT",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
    }
)
SYSTEM_TOPIC_PREFIXES = ("%RETRY%", "%DLQ%", "rmq_sys_")


@dataclass(frozen=True, slots=True)
class TopicQueues:
    """Where a topic lives: per broker name, its address (master preferred) and queue counts."""

    topic: str
    addresses: dict[str, str]
    read_queues: dict[str, int]
    write_queues: dict[str, int]

    def readable(self) -> list[QueueRef]:
        return [
            QueueRef(self.topic, broker, q)
            for broker in sorted(self.read_queues)
            if broker in self.addresses
            for q in range(self.read_queues[broker])
        ]

    def writable(self) -> list[QueueRef]:
        return [
            QueueRef(self.topic, broker, q)
            for broker in sorted(self.write_queues)
            if broker in self.addresses
            for q in range(self.write_queues[broker])
        ]


@dataclass(slots=True)
class PullResponse:
    code: int
    next_begin_offset: int
    min_offset: int
    max_offset: int
    # The records, as a view into the response frame when the transport gives one (no copy: the
    # source joins a pull's bodies into one batch buffer anyway).
    body: bytes | memoryview
    remark: str | None


def _body_view(resp: RemotingCommand) -> bytes | memoryview:
    """The response body without a copy when it is (a view into) an immutable `bytes` frame; a
    view into anything mutable (a reused receive buffer) is copied."""
    body = resp.body
    if resp.body_parts is None:
        if isinstance(body, bytes):
            return body
        if isinstance(body, memoryview) and isinstance(body.obj, bytes):
            return body
    return resp.body_bytes()


async def _settle() -> None:
    for _ in range(SETTLE_ITERATIONS):
        await asyncio.sleep(0)


def _route_queues(topic: str, route: Any) -> TopicQueues:
    addresses: dict[str, str] = {}
    for broker in route.broker_datas:
        addrs = {int(k): v for k, v in broker.broker_addrs.items()}
        if addrs:
            # The master when it is up, else the lowest-id slave (reads still work from a slave).
            addresses[broker.broker_name] = addrs.get(MASTER_ID) or addrs[min(addrs)]
    read = {qd.broker_name: qd.read_queue_nums for qd in route.queue_datas if is_readable(qd.perm)}
    write = {
        qd.broker_name: qd.write_queue_nums
        for qd in route.queue_datas
        if is_writeable(qd.perm)
        and any(
            int(k) == MASTER_ID
            for b in route.broker_datas
            if b.broker_name == qd.broker_name
            for k in b.broker_addrs
        )
    }
    return TopicQueues(topic, addresses, read, write)


class BrokerAccess:
    """Blocking access to a cluster through one name-server list; use from one thread at a time.

    Created lazily where it is used, never pickled. Metadata calls (topic queues, topic list for
    patterns, min/max offsets, timestamp lookups) issue all queues of a call concurrently; `pull_raw`
    returns the broker's raw record bytes (decoded later into Arrow), `send_batch_raw` sends a ready
    SEND_BATCH_MESSAGE body, `update_consumer_offset` reports progress for monitoring (oneway).
    """

    def __init__(
        self,
        namesrv: Sequence[str],
        *,
        timeout_s: float = 10.0,
        credentials: tuple[str, str] | None = None,
    ) -> None:
        self.namesrv = tuple(namesrv)
        self.credentials = credentials
        self.timeout_s = timeout_s
        factory = fast_loop_factory()  # uvloop when installed: less CPU per pull in the loop itself
        self._loop = factory() if factory is not None else asyncio.new_event_loop()
        self._remoting: RemotingClient | None = None
        self._api: MQClientAPI | None = None
        self._closed = False

    # ---- plumbing -----------------------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        # The loop runs only inside these calls: a connection the server closed meanwhile (name servers
        # and brokers close channels idle for 120 s) still looks open until its EOF is processed, and a
        # request written to it would fail. A few empty iterations first let the loop see that close, so
        # the pool reconnects.
        self._loop.run_until_complete(_settle())
        return self._loop.run_until_complete(coro)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def api(self) -> MQClientAPI:
        if self._api is None:
            access_key, secret_key = self.credentials or (None, None)
            self._remoting = RemotingClient(
                connect_timeout=min(self.timeout_s, 5.0),
                name="orbitmq-spark",
                rpc_hook=request_signer(access_key, secret_key),
            )
            self._api = MQClientAPI(self._remoting, list(self.namesrv), timeout=self.timeout_s)
        return self._api

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._remoting is not None:
            self._loop.run_until_complete(self._remoting.close())
        self._loop.close()

    async def _gather(self, calls: Iterable[Awaitable[T]]) -> list[T]:
        return list(await asyncio.gather(*calls))

    # ---- metadata -----------------------------------------------------------------------------

    def masters(self) -> dict[str, str]:
        """Broker name -> master address, as the name server's cluster info lists them."""
        info = ClusterInfo.from_json(self.run(self.api.get_broker_cluster_info()))
        return {
            name: data.broker_addrs[MASTER_ID]
            for name, data in info.broker_addr_table.items()
            if MASTER_ID in data.broker_addrs
        }

    def topic_queues(self, topics: Iterable[str]) -> dict[str, TopicQueues]:
        """Routes of `topics`; a topic the name server does not know is left out."""
        return self.run(self.topic_queues_async(topics))

    async def topic_queues_async(self, topics: Iterable[str]) -> dict[str, TopicQueues]:
        async def one(topic: str) -> TopicQueues | None:
            route = await self.api.get_topic_route(topic)
            return None if route is None else _route_queues(topic, route)

        found = await self._gather(one(t) for t in sorted(set(topics)))
        return {tq.topic: tq for tq in found if tq is not None}

    def topics_matching(self, pattern: str) -> list[str]:
        """User topics the name server knows whose whole name matches `pattern`.

        System topics (fact sheet 7.10: TBW102, SCHEDULE_TOPIC_XXXX, the cluster and broker name
        topics, transaction and trace topics, `%RETRY%`/`%DLQ%` group topics) never match.
        """
        names = self._topic_list(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, required=True)
        system = set(self._topic_list(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, required=False))
        regex = re.compile(pattern)
        return sorted(
            t
            for t in names
            if regex.fullmatch(t)
            and t not in system
            and t not in SYSTEM_TOPICS
            and not t.startswith(SYSTEM_TOPIC_PREFIXES)
            and not t.endswith("_REPLY_TOPIC")
        )

    def _topic_list(self, code: int, *, required: bool) -> list[str]:
        resp = self.run(self.api.invoke_namesrv(RemotingCommand.request(code)))
        if resp.code != ResponseCode.SUCCESS:
            if required:
                raise BrokerError(resp.code, resp.remark, address="namesrv")
            return []
        body = java_json.loads(resp.body_bytes()) if resp.body_length else {}
        return [str(t) for t in body.get("topicList", [])] if isinstance(body, dict) else []

    def _queue_call(
        self, code: int, addresses: Mapping[str, str], queues: Sequence[QueueRef], **extra: object
    ) -> dict[QueueRef, int]:
        async def one(q: QueueRef) -> int:
            mq = MessageQueue(q.topic, q.broker, q.queue_id)
            addr = addresses[q.broker]
            if code == RequestCode.GET_MAX_OFFSET:
                return await self.api.get_max_offset(addr, mq)
            if code == RequestCode.GET_MIN_OFFSET:
                return await self.api.get_min_offset(addr, mq)
            return await self.api.search_offset(addr, mq, int(extra["timestamp"]))  # type: ignore[call-overload]

        values = self.run(self._gather(one(q) for q in queues))
        return dict(zip(queues, values, strict=True))

    def min_max_offsets(
        self, addresses: Mapping[str, str], queues: Sequence[QueueRef]
    ) -> tuple[dict[QueueRef, int], dict[QueueRef, int]]:
        """Min and max logical offsets of each queue (all queues asked concurrently)."""
        known = [q for q in queues if q.broker in addresses]

        async def both() -> tuple[list[int], list[int]]:
            mins = [
                self.api.get_min_offset(addresses[q.broker], MessageQueue(q.topic, q.broker, q.queue_id))
                for q in known
            ]
            maxs = [
                self.api.get_max_offset(addresses[q.broker], MessageQueue(q.topic, q.broker, q.queue_id))
                for q in known
            ]
            values = await asyncio.gather(*mins, *maxs)
            return list(values[: len(known)]), list(values[len(known) :])

        low, high = self.run(both())
        # A queue that never held a message may answer -1; offsets start at 0 and max >= min.
        mins = {q: max(0, lo) for q, lo in zip(known, low, strict=True)}
        maxs = {q: max(mins[q], hi) for q, hi in zip(known, high, strict=True)}
        return mins, maxs

    def offsets_for_timestamp(
        self,
        addresses: Mapping[str, str],
        queues: Sequence[QueueRef],
        timestamp_ms: int,
        mins: Mapping[QueueRef, int],
        maxs: Mapping[QueueRef, int],
    ) -> dict[QueueRef, int]:
        """The first offset whose store timestamp is >= `timestamp_ms` in each queue (max if none).

        RocketMQ's SEARCH_OFFSET_BY_TIMESTAMP answers the offset whose time is *closest*, which may be
        one before or after the boundary; the answer is only a hint here. It is checked by reading
        the store timestamps around it, and if it is wrong, the boundary is found by binary search
        (one single-message pull per step).
        """
        known = [q for q in queues if q.broker in addresses and q in mins and q in maxs]
        hints = self._queue_call(
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, addresses, known, timestamp=timestamp_ms
        )

        async def exact(q: QueueRef) -> int:
            addr = addresses[q.broker]
            low, high = mins[q], maxs[q]  # answer in [low, high]

            async def before(offset: int) -> bool:
                stamp = await self.store_timestamp_at(addr, q, offset)
                return stamp is not None and stamp < timestamp_ms

            hint = min(max(hints[q], low), high)
            if (hint == low or await before(hint - 1)) and (hint == high or not await before(hint)):
                return hint
            while low < high:
                middle = (low + high) // 2
                if await before(middle):
                    low = middle + 1
                else:
                    high = middle
            return low

        values = self.run(self._gather(exact(q) for q in known))
        return dict(zip(known, values, strict=True))

    async def store_timestamp_at(self, addr: str, queue: QueueRef, offset: int) -> int | None:
        """The store timestamp of the message at `offset`, or None if it cannot be read."""
        resp = await self.pull_raw(
            addr, queue, offset, 1, group=DEFAULT_GROUP, tags="*", timeout_s=self.timeout_s
        )
        if resp.code != ResponseCode.SUCCESS or len(resp.body) < 96:
            return None
        sys_flag = int.from_bytes(resp.body[36:40], "big")
        pos = 56 + (12 if sys_flag & 0x10 else 0)
        return int.from_bytes(resp.body[pos : pos + 8], "big", signed=True)

    # ---- pull, send, progress -----------------------------------------------------------------

    async def pull_raw(
        self,
        addr: str,
        queue: QueueRef,
        offset: int,
        max_nums: int,
        *,
        group: str,
        tags: str,
        timeout_s: float,
        expression_type: str = "TAG",
    ) -> PullResponse:
        header = {
            "consumerGroup": group,
            "topic": queue.topic,
            "queueId": str(queue.queue_id),
            "queueOffset": str(offset),
            "maxMsgNums": str(max_nums),
            "sysFlag": str(FLAG_SUBSCRIPTION),
            "commitOffset": "0",
            "suspendTimeoutMillis": "0",
            "subscription": tags,
            "subVersion": "0",
            "expressionType": expression_type,
            "bname": queue.broker,
        }
        resp = await self.api.invoke(
            addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header), timeout_s
        )
        ext = resp.ext_fields

        def field(name: str) -> int:
            value = ext.get(name)
            return int(value) if value not in (None, "", "null") else 0

        return PullResponse(
            resp.code,
            field("nextBeginOffset"),
            field("minOffset"),
            field("maxOffset"),
            _body_view(resp) if resp.code == ResponseCode.SUCCESS else b"",
            resp.remark,
        )

    async def send_batch_raw(
        self, addr: str, header: Mapping[str, str], body: bytes | Sequence[Buffer], timeout_s: float
    ) -> RemotingCommand:
        """SEND_BATCH_MESSAGE of a batch body, given whole or as consecutive parts (sent as they are)."""
        if isinstance(body, bytes):
            request = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, header, body)
        else:
            request = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, header)
            request.body_parts = list(body)
        return await self.api.invoke(addr, request, timeout_s)

    def update_consumer_offsets(
        self, group: str, addresses: Mapping[str, str], offsets: Mapping[QueueRef, int]
    ) -> None:
        """Report `offsets` as the consumer group's progress (for lag monitoring; never read back)."""

        async def one(q: QueueRef, offset: int) -> None:
            mq = MessageQueue(q.topic, q.broker, q.queue_id)
            await self.api.update_consumer_offset(addresses[q.broker], group, mq, offset, oneway=True)

        self.run(self._gather(one(q, o) for q, o in offsets.items() if q.broker in addresses))


_CACHE: dict[tuple[int, tuple[str, ...], float, str, tuple[str, str] | None], BrokerAccess] = {}


def shared_access(
    namesrv: Sequence[str],
    timeout_s: float,
    *,
    role: str = "",
    credentials: tuple[str, str] | None = None,
) -> BrokerAccess:
    """The process's cached `BrokerAccess` for this name-server list (created on first use).

    `role` keeps users apart that may drive their loop from another thread (the range reader runs
    its pulls on a background thread): each role has its own loop and connections.
    """
    key = (os.getpid(), tuple(namesrv), float(timeout_s), role, credentials)
    access = _CACHE.get(key)
    if access is None or access._closed:
        access = _CACHE[key] = BrokerAccess(namesrv, timeout_s=timeout_s, credentials=credentials)
    return access


@atexit.register
def _close_cached() -> None:
    pid = os.getpid()
    for key, access in list(_CACHE.items()):
        if key[0] == pid:
            try:
                access.close()
            except Exception:  # interpreter shutdown: nothing left to report to
                pass
        _CACHE.pop(key, None)
