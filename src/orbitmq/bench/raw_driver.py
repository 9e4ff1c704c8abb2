"""The "orbitmq-raw" driver: raw remoting requests, no client library, to measure a broker alone.

It does none of a real client's work (heartbeats, rebalance, retries), so the difference between
"orbitmq-raw" and "orbitmq" is what the client library costs; it works against any RocketMQ 4.x.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import struct
import time
from collections.abc import Sequence
from typing import Any

from orbitmq.bench.driver import Driver, DriverUnavailable, OnBodies, ServerHandle
from orbitmq.common.errors import BrokerError
from orbitmq.message.record_layout import iter_record_spans, record_body
from orbitmq.protocol import java_json
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.client import RemotingClient

TIMEOUT = 5.0
PRODUCER_GROUP = "orbitmq_bench_raw_producer"
STORED_CODES = frozenset({0, 10, 11, 12})  # SUCCESS, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NA
PULL_BATCH = 32  # DefaultMQPushConsumer.pullBatchSize
SUSPEND_MS = 1000  # short long-poll so a stopped consume returns promptly
FLAG_COMMIT_OFFSET, FLAG_SUSPEND, FLAG_SUBSCRIPTION = 0x1, 0x2, 0x4
_BATCH_ITEM = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH


class UniqueKeys:
    """UNIQ_KEY values shaped like the Java client's (32 hex chars: a fixed 24-char prefix + counter)."""

    def __init__(self) -> None:
        self.prefix = (
            bytes([127, 0, 0, 1]) + (os.getpid() & 0xFFFF).to_bytes(2, "big") + os.urandom(6)
        ).hex()
        self.counter = itertools.count()

    def next(self) -> str:
        return f"{self.prefix}{next(self.counter) & 0xFFFFFFFF:08X}".upper()


class RawQueue:
    __slots__ = ("broker_addr", "broker_name", "queue_id")

    def __init__(self, broker_name: str, broker_addr: str, queue_id: int) -> None:
        self.broker_name = broker_name
        self.broker_addr = broker_addr
        self.queue_id = queue_id


def parse_route(body: bytes) -> list[RawQueue]:
    """Write queues of a TopicRouteData body, on brokers that have a master (brokerId 0)."""
    route: dict[str, Any] = java_json.loads(body)
    masters: dict[str, str] = {}
    for broker in route.get("brokerDatas") or []:
        addrs = {int(k): v for k, v in (broker.get("brokerAddrs") or {}).items()}
        if 0 in addrs:
            masters[broker["brokerName"]] = addrs[0]
    queues: list[RawQueue] = []
    for qd in sorted(route.get("queueDatas") or [], key=lambda q: q["brokerName"]):
        name = qd["brokerName"]
        if name in masters and int(qd.get("perm", 6)) & 0x2:
            queues += [RawQueue(name, masters[name], i) for i in range(int(qd["writeQueueNums"]))]
    return queues


def encode_batch_body(bodies: Sequence[bytes], properties: Sequence[str]) -> bytes:
    """The SEND_BATCH_MESSAGE body (fact sheet 5.9): per message size, 0 magic, 0 crc, flag, body, props."""
    parts: list[bytes] = []
    for body, props in zip(bodies, properties, strict=True):
        raw_props = props.encode()
        parts.append(_BATCH_ITEM.pack(22 + len(body) + len(raw_props), 0, 0, 0, len(body)))
        parts.append(body)
        parts.append(len(raw_props).to_bytes(2, "big"))
        parts.append(raw_props)
    return b"".join(parts)


class RawDriver(Driver):
    """RocketMQ 4.x requests through transport.RemotingClient: GET_BROKER_CLUSTER_INFO and
    UPDATE_AND_CREATE_TOPIC to make the topic, GET_ROUTEINFO_BY_TOPIC for the queues, SEND_MESSAGE_V2 /
    SEND_BATCH_MESSAGE to send (queues round-robin, a UNIQ_KEY per message as real producers set), and
    PULL_MESSAGE per queue with long polling and FLAG_COMMIT_OFFSET to consume (bodies are sliced out of
    the pulled records without decoding the rest).
    """

    system = "orbitmq-raw"

    def __init__(self, namesrv: str, server: ServerHandle | None = None) -> None:
        super().__init__(server)
        self.namesrv = namesrv
        self.remoting: RemotingClient | None = None
        self.queues: dict[str, list[RawQueue]] = {}
        self.rotation: dict[str, itertools.cycle[RawQueue]] = {}
        self.keys = UniqueKeys()

    @property
    def client(self) -> RemotingClient:
        if self.remoting is None:
            raise RuntimeError("driver not opened")
        return self.remoting

    async def open(self) -> None:
        self.remoting = RemotingClient(connect_timeout=3.0, name="bench-raw")
        request = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        try:
            await self.client.invoke(self.namesrv, request, TIMEOUT)
        except Exception as exc:
            raise DriverUnavailable(f"no nameserver answering at {self.namesrv}: {exc}") from exc

    async def close(self) -> None:
        if self.remoting is not None:
            await self.remoting.close()

    async def _invoke(
        self, addr: str, request: RemotingCommand, ok: frozenset[int] = frozenset({0})
    ) -> RemotingCommand:
        response = await self.client.invoke(addr, request, TIMEOUT)
        if response.code not in ok:
            raise BrokerError(response.code, response.remark, address=addr)
        return response

    async def master_addresses(self) -> list[str]:
        response = await self._invoke(
            self.namesrv, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        )
        info: dict[str, Any] = java_json.loads(response.body_bytes())
        addresses = []
        for broker in (info.get("brokerAddrTable") or {}).values():
            addrs = {int(k): v for k, v in (broker.get("brokerAddrs") or {}).items()}
            if 0 in addrs:
                addresses.append(addrs[0])
        return addresses

    async def create_topic(self, topic: str, queues: int) -> None:
        masters = await self.master_addresses()
        if not masters:
            raise DriverUnavailable(f"no broker master registered with {self.namesrv}")
        fields = {
            "topic": topic,
            "defaultTopic": "TBW102",
            "readQueueNums": str(queues),
            "writeQueueNums": str(queues),
            "perm": "6",
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": "0",
            "order": "false",
        }
        for addr in masters:
            await self._invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields))
        # The broker registers the new topic with the nameserver; wait until the route shows it.
        deadline = time.monotonic() + 15
        while True:
            request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
            response = await self.client.invoke(self.namesrv, request, TIMEOUT)
            if response.code == ResponseCode.SUCCESS:
                found = parse_route(response.body_bytes())
                if len(found) >= queues * len(masters):  # every broker's queues (serve --brokers N)
                    self.queues[topic] = found
                    self.rotation[topic] = itertools.cycle(found)
                    return
            if time.monotonic() > deadline:
                raise DriverUnavailable(f"topic {topic} has no route 15 s after UPDATE_AND_CREATE_TOPIC")
            await asyncio.sleep(0.05)

    async def delete_topic(self, topic: str) -> None:
        self.queues.pop(topic, None)
        self.rotation.pop(topic, None)

    def _send_fields(self, topic: str, queue: RawQueue, properties: str, *, batch: bool) -> dict[str, str]:
        return {
            "a": PRODUCER_GROUP,
            "b": topic,
            "c": "TBW102",
            "d": "4",
            "e": str(queue.queue_id),
            "f": "0",
            "g": str(int(time.time() * 1000)),
            "h": "0",
            "i": properties,
            "j": "0",
            "k": "false",
            "m": "true" if batch else "false",
            "n": queue.broker_name,
        }

    async def send(self, topic: str, body: bytes) -> None:
        queue = next(self.rotation[topic])
        properties = f"UNIQ_KEY\x01{self.keys.next()}\x02WAIT\x01true"
        request = RemotingCommand.request(
            RequestCode.SEND_MESSAGE_V2, self._send_fields(topic, queue, properties, batch=False), body
        )
        await self._invoke(queue.broker_addr, request, STORED_CODES)

    async def send_batch(self, topic: str, bodies: Sequence[bytes]) -> None:
        queue = next(self.rotation[topic])
        own = [f"UNIQ_KEY\x01{self.keys.next()}" for _ in bodies]
        request = RemotingCommand.request(
            RequestCode.SEND_BATCH_MESSAGE,
            self._send_fields(topic, queue, "WAIT\x01true", batch=True),
            encode_batch_body(bodies, own),
        )
        await self._invoke(queue.broker_addr, request, STORED_CODES)

    async def max_offset(self, queue: RawQueue, topic: str) -> int:
        """The queue's max offset (GET_MAX_OFFSET): one past its newest message."""
        fields = {"topic": topic, "queueId": str(queue.queue_id), "bname": queue.broker_name}
        request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, fields)
        response = await self._invoke(queue.broker_addr, request)
        return int(response.ext_fields["offset"])

    async def pull_at(self, topic: str, group: str, queue: RawQueue, offset: int, count: int) -> int:
        """One PULL_MESSAGE of up to `count` messages at `offset`, no long polling and no offset commit;
        returns how many messages came back (0 when there are none there)."""
        fields = {
            "consumerGroup": group,
            "topic": topic,
            "queueId": str(queue.queue_id),
            "queueOffset": str(offset),
            "maxMsgNums": str(count),
            "sysFlag": str(FLAG_SUBSCRIPTION),
            "commitOffset": "0",
            "suspendTimeoutMillis": "0",
            "subscription": "*",
            "subVersion": "0",
            "expressionType": "TAG",
            "bname": queue.broker_name,
        }
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, fields)
        response = await self.client.invoke(queue.broker_addr, request, TIMEOUT)
        if response.code == ResponseCode.SUCCESS:
            return sum(1 for _ in iter_record_spans(response.body_bytes()))
        if response.code in (
            ResponseCode.PULL_NOT_FOUND,
            ResponseCode.PULL_RETRY_IMMEDIATELY,
            ResponseCode.PULL_OFFSET_MOVED,
        ):
            return 0
        raise BrokerError(response.code, response.remark, address=queue.broker_addr)

    async def consume(self, topic: str, group: str, on_bodies: OnBodies, stop: asyncio.Event) -> None:
        queues = self.queues.get(topic)
        if not queues:
            raise DriverUnavailable(f"topic {topic} was not created by this driver")
        tasks = [asyncio.ensure_future(self._pull_queue(topic, group, q, on_bodies, stop)) for q in queues]
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _pull_queue(
        self, topic: str, group: str, queue: RawQueue, on_bodies: OnBodies, stop: asyncio.Event
    ) -> None:
        offset = 0
        while not stop.is_set():
            fields = {
                "consumerGroup": group,
                "topic": topic,
                "queueId": str(queue.queue_id),
                "queueOffset": str(offset),
                "maxMsgNums": str(PULL_BATCH),
                "sysFlag": str(FLAG_SUSPEND | FLAG_SUBSCRIPTION | (FLAG_COMMIT_OFFSET if offset > 0 else 0)),
                "commitOffset": str(offset),
                "suspendTimeoutMillis": str(SUSPEND_MS),
                "subscription": "*",
                "subVersion": "0",
                "expressionType": "TAG",
                "bname": queue.broker_name,
            }
            request = RemotingCommand.request(RequestCode.PULL_MESSAGE, fields)
            response = await self.client.invoke(queue.broker_addr, request, TIMEOUT + SUSPEND_MS / 1000)
            code = response.code
            if code == ResponseCode.SUCCESS:
                body = response.body_bytes()
                on_bodies([bytes(record_body(body, pos)) for pos, _ in iter_record_spans(body)])
                offset = int(response.ext_fields["nextBeginOffset"])
            elif code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
                offset = int(response.ext_fields.get("nextBeginOffset", offset))
            elif code == ResponseCode.PULL_OFFSET_MOVED:
                offset = int(response.ext_fields["nextBeginOffset"])
            else:
                raise BrokerError(code, response.remark, address=queue.broker_addr)
