"""The slave side of replication: copy the master's commit log, byte for byte, into the local store.

`HAClient` connects to the master's HA address (learned from the nameserver's register response, or
configured), reports its max physical offset, appends every transfer that continues its log exactly
(the store then dispatches consume queues and index from the copied bytes), and reports again after each
append. Data that does not continue the log closes the connection. It reconnects after faults and
resumes from its own offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.replication.frames import (
    EPOCH_SIZE,
    EPOCHS_HEAD_SIZE,
    TransferDecoder,
    continues_log,
    decode_epochs,
    decode_epochs_head,
    encode_offset_report,
    encode_slave_hello,
)
from orbitmq.replication.log import ReplicatedLog

log = logging.getLogger(__name__)


class HAClient:
    def __init__(
        self,
        store: ReplicatedLog,
        *,
        master_address: str | None = None,
        heartbeat_interval: float = 5.0,
        housekeeping_interval: float = 20.0,
        reconnect_interval: float = 5.0,
        on_appended: Callable[[], None] | None = None,
        broker_id: int | None = None,
        on_master_epochs: Callable[[list[tuple[int, int]], int], None] | None = None,
    ) -> None:
        self._store = store
        self._master_address = master_address
        self._heartbeat_interval = heartbeat_interval
        self._housekeeping_interval = housekeeping_interval
        self._reconnect_interval = reconnect_interval
        self._on_appended = on_appended
        self._broker_id = broker_id  # controller mode: named to the master first (encode_slave_hello)
        # Controller mode: given the master's epochs and max offset before the first offset report, to
        # cut the local log where it stops agreeing with the master's.
        self._on_master_epochs = on_master_epochs
        self._task: asyncio.Task[None] | None = None
        self._address_changed = asyncio.Event()
        self.connected = False
        self.last_transfer_monotonic = 0.0
        self._stopping = False

    @property
    def master_address(self) -> str | None:
        return self._master_address

    def update_master_address(self, address: str | None) -> None:
        """The nameserver told us where the master's HA port is (it may have moved)."""
        if address and address != self._master_address:
            self._master_address = address
            self._address_changed.set()

    async def start(self) -> None:
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name="ha-client")

    async def stop(self) -> None:
        # The flag ends the loop even if a cancellation gets swallowed by an inner cleanup.
        self._stopping = True
        self._address_changed.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while not self._stopping:
            address = self._master_address
            if not address:
                self._address_changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._reconnect_interval):
                        await self._address_changed.wait()
                continue
            try:
                await self._replicate(address)
            except (OSError, RemoteProtocolError, TimeoutError, asyncio.IncompleteReadError) as exc:
                log.info("replication from %s interrupted: %s", address, exc)
            finally:
                self.connected = False
            self._address_changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._reconnect_interval):
                    await self._address_changed.wait()

    async def _replicate(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        connect = asyncio.ensure_future(asyncio.open_connection(host, int(port)))
        try:
            async with asyncio.timeout(3.0):
                reader, writer = await asyncio.shield(connect)
        except BaseException:
            # Cancelled (stop) or timed out just as the connection was made: close it, or the master
            # would keep a half-open slave connection waiting for an offset report.
            connect.add_done_callback(_close_if_connected)
            connect.cancel()
            raise
        self.connected = True
        try:
            if self._broker_id is not None:
                await self._handshake(reader, writer)
        except BaseException:
            writer.close()
            raise
        reporter = asyncio.create_task(self._report_loop(writer))
        try:
            await self._receive_loop(reader, writer, address)
        finally:
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await reporter
            writer.close()

    async def _handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Controller mode: name our broker id, hear the master's epochs (and cut our log to agree)."""
        assert self._broker_id is not None
        writer.write(encode_slave_hello(self._broker_id))
        async with asyncio.timeout(self._housekeeping_interval):
            master_max, count = decode_epochs_head(await reader.readexactly(EPOCHS_HEAD_SIZE))
            entries = decode_epochs(await reader.readexactly(count * EPOCH_SIZE))
        if self._on_master_epochs is not None:
            self._on_master_epochs(entries, master_max)

    async def _report_loop(self, writer: asyncio.StreamWriter) -> None:
        while True:
            writer.write(encode_offset_report(self._store.get_max_phy_offset()))
            await writer.drain()
            await asyncio.sleep(self._heartbeat_interval)

    async def _receive_loop(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: str
    ) -> None:
        decoder = TransferDecoder()
        loop = asyncio.get_running_loop()
        while self._master_address == address:
            async with asyncio.timeout(self._housekeeping_interval):
                data = await reader.read(4 * 1024 * 1024)
            if not data:
                raise ConnectionError("master closed the connection")
            appended = False
            for transfer in decoder.feed(data):
                self.last_transfer_monotonic = loop.time()
                if transfer.is_heartbeat:
                    continue
                max_offset = self._store.get_max_phy_offset()
                if not continues_log(max_offset, transfer):
                    raise RemoteProtocolError(
                        f"master sent offset {transfer.master_offset}, slave log ends at {max_offset}"
                    )
                if not self._store.append_to_commit_log(transfer.master_offset, transfer.data):
                    raise RemoteProtocolError(f"store refused replicated data at {transfer.master_offset}")
                appended = True
            if appended:
                # Report at once so SYNC_MASTER sends are released without waiting for the heartbeat.
                writer.write(encode_offset_report(self._store.get_max_phy_offset()))
                await writer.drain()
                if self._on_appended is not None:
                    self._on_appended()


def _close_if_connected(task: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]]) -> None:
    if not task.cancelled() and task.exception() is None:
        task.result()[1].close()
