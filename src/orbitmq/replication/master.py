"""The master side of replication: stream the commit log to slaves and track what they have.

`HAService` listens on the HA port. For each slave connection it waits for the first offset report,
then streams raw commit-log bytes from there (12-byte transfer header + data, at most
`transfer_batch_size` per frame), heartbeats when idle, and records every later report as that slave's
acknowledged offset. SYNC_MASTER sends wait on `wait_for_replication` until a slave's acknowledged offset
passes the end of their message.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections.abc import Callable

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.replication.frames import (
    SLAVE_HELLO_SIZE,
    OffsetReportDecoder,
    decode_slave_hello,
    encode_epochs,
    encode_transfer_header,
    transfer_start_offset,
)
from orbitmq.replication.log import ReplicatedLog

log = logging.getLogger(__name__)


class HAService:
    def __init__(
        self,
        store: ReplicatedLog,
        *,
        file_size: int,
        host: str = "127.0.0.1",
        port: int = 0,
        transfer_batch_size: int = 32 * 1024,
        heartbeat_interval: float = 5.0,
        housekeeping_interval: float = 20.0,
        slave_fall_behind_max: int = 256 * 1024 * 1024,
        max_connections: int = 16,
        identify_slaves: bool = False,
        epochs: Callable[[], list[tuple[int, int]]] | None = None,
    ) -> None:
        self._store = store
        self._file_size = file_size
        self._host = host
        self._port = port
        self._batch = transfer_batch_size
        self._heartbeat_interval = heartbeat_interval
        self._housekeeping_interval = housekeeping_interval
        self._fall_behind_max = slave_fall_behind_max
        # A master has a handful of slaves: anyone past this many is closed on accept (haMaxConnections).
        self._max_connections = max_connections
        self.refused_connections = 0
        # Controller mode: each slave names its broker id first; acks and catch-up are kept per id.
        self._identify = identify_slaves
        self._epochs = epochs  # the epoch file's entries, told to each identified slave first
        self.slave_acks: dict[int, int] = {}
        self.caught_up: dict[int, float] = {}  # broker id -> loop time it last had the whole log
        # The slaves a waiting send needs (every other replica of the SyncStateSet); None: any one slave.
        self.required: frozenset[int] | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[_SlaveConnection] = set()
        self._new_data = asyncio.Event()
        # push2SlaveMaxOffset: the highest offset any slave has acknowledged.
        self.slave_ack_offset = 0
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._seq = itertools.count()
        # Called with True when the first slave connects and with False when the last one leaves: the
        # broker hangs `notify_arrival` on the store only while a slave may wait for new data.
        self.slaves_listener: Callable[[bool], None] | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "HAService not started"
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def address(self) -> str:
        return f"{self._host}:{self.port}"

    @property
    def connected_slaves(self) -> int:
        return len(self._connections)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._on_connection, self._host, self._port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            conn.close()
        for task in [c.task for c in self._connections if c.task is not None]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        for _, _, fut in self._waiters:
            if not fut.done():
                fut.set_result(False)
        self._waiters.clear()

    def notify_new_data(self) -> None:
        """Called after every append: wakes the streams waiting at the end of the log."""
        self._new_data.set()

    def notify_arrival(self, topic: str, queue_id: int, max_offset: int, tags_code: int) -> None:
        """`notify_new_data` as the store's arrival listener (called per put: one frame, no lambda),
        hung on the store only while a slave is connected (`slaves_listener`); a slave's send loop that
        starts later reads the log before its first wait."""
        if self._connections:
            self._new_data.set()

    def is_slave_ok(self, master_put_offset: int) -> bool:
        """SYNC_MASTER precondition: a slave is connected and not too far behind."""
        return bool(self._connections) and master_put_offset - self.slave_ack_offset < self._fall_behind_max

    async def wait_for_replication(self, end_offset: int, timeout: float) -> bool:
        """True once a slave acknowledged `end_offset`, False after `timeout` seconds."""
        if self._acked() >= end_offset:
            return True
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (end_offset, next(self._seq), fut))
        try:
            # wait_for, not asyncio.timeout: the broker may run its processors outside a task.
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            fut.cancel()
            # A connected slave that stopped acknowledging leaves timed-out waiters behind: drop them
            # before they pile up (each SYNC_MASTER send during the outage adds one).
            if len(self._waiters) > 1024:
                self._waiters = [w for w in self._waiters if not w[2].done()]
                heapq.heapify(self._waiters)
            return False

    def set_required(self, broker_ids: frozenset[int] | None) -> None:
        """Sends from now on (and those waiting) need every slave in `broker_ids` (None: any slave)."""
        self.required = broker_ids
        self._release()

    def _on_ack(self, offset: int, conn: _SlaveConnection | None = None) -> None:
        self.slave_ack_offset = max(self.slave_ack_offset, offset)
        if conn is not None and conn.broker_id is not None:
            bid = conn.broker_id
            self.slave_acks[bid] = max(self.slave_acks.get(bid, 0), offset)
            # Caught up at T: it has all the master had at T, when the stream last reached the log's end
            # (under steady load the log's end moves on before any ack comes back).
            end, at = conn.sent_all
            if offset >= end and at > self.caught_up.get(bid, 0.0):
                self.caught_up[bid] = at
        self._release()

    def _acked(self) -> int:
        """The offset every slave a send needs has acknowledged."""
        if self.required is None:
            return self.slave_ack_offset
        if self.required:
            return min(self.slave_acks.get(i, 0) for i in self.required)
        return 1 << 62  # the master alone is the SyncStateSet: nobody else to wait for

    def _release(self) -> None:
        acked = self._acked()
        while self._waiters and self._waiters[0][0] <= acked:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(True)

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= self._max_connections:
            self.refused_connections += 1
            if self.refused_connections == 1 or self.refused_connections % 1000 == 0:  # a flood logs little
                log.warning(
                    "HA connection from %s closed: %d open already (haMaxConnections); %d refused so far",
                    writer.get_extra_info("peername"),
                    len(self._connections),
                    self.refused_connections,
                )
            writer.close()
            return
        conn = _SlaveConnection(self, reader, writer)
        self._connections.add(conn)
        if len(self._connections) == 1 and self.slaves_listener is not None:
            self.slaves_listener(True)
        conn.task = asyncio.current_task()
        try:
            await conn.run()
        except (ConnectionError, RemoteProtocolError, TimeoutError, asyncio.IncompleteReadError) as exc:
            log.info("HA connection from %s closed: %s", conn.peer, exc)
        finally:
            self._connections.discard(conn)
            conn.close()
            if not self._connections and self.slaves_listener is not None:
                self.slaves_listener(False)


class _SlaveConnection:
    def __init__(
        self, service: HAService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.service = service
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.task: asyncio.Task[None] | None = None
        self._decoder = OffsetReportDecoder()
        self._reported = asyncio.Event()
        self._next_transfer: int | None = None
        self.broker_id: int | None = None
        self.sent_all = (0, 0.0)  # (offset, loop time) when the stream last reached the log's end

    def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()

    async def run(self) -> None:
        sender = asyncio.create_task(self._send_loop())
        try:
            await self._read_loop()
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await sender

    async def _read_loop(self) -> None:
        service = self.service
        if service._identify:
            async with asyncio.timeout(service._housekeeping_interval):
                self.broker_id = decode_slave_hello(await self.reader.readexactly(SLAVE_HELLO_SIZE))
            entries = service._epochs() if service._epochs is not None else []
            self.writer.write(encode_epochs(entries, service._store.get_max_phy_offset()))
        while True:
            async with asyncio.timeout(service._housekeeping_interval):
                data = await self.reader.read(65536)
            if not data:
                raise ConnectionError("slave closed the connection")
            offset = self._decoder.feed(data)
            if offset is None:
                continue
            if self._next_transfer is None:
                self._next_transfer = transfer_start_offset(
                    offset, service._store.get_max_phy_offset(), service._file_size
                )
                self._reported.set()
            elif offset > service._store.get_max_phy_offset():
                raise RemoteProtocolError(f"slave {self.peer} reports {offset}, beyond the master's log")
            service._on_ack(offset, self)

    async def _send_loop(self) -> None:
        service = self.service
        await self._reported.wait()
        loop = asyncio.get_running_loop()
        last_write = loop.time()
        while True:
            assert self._next_transfer is not None
            data = service._store.get_commit_log_data(self._next_transfer, service._batch)
            if data is not None and len(data) > 0:
                self.writer.writelines([encode_transfer_header(self._next_transfer, len(data)), data])
                self._next_transfer += len(data)
                await self.writer.drain()
                last_write = loop.time()
                continue
            service._new_data.clear()
            # Re-check after clearing: an append between the read above and clear() must not be missed.
            if service._store.get_max_phy_offset() > self._next_transfer:
                continue
            self.sent_all = (self._next_transfer, loop.time())
            wait = service._heartbeat_interval - (loop.time() - last_write)
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await service._new_data.wait()
                continue
            self.writer.write(encode_transfer_header(self._next_transfer, 0))
            await self.writer.drain()
            last_write = loop.time()
