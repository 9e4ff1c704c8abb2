"""HAService (master) and HAClient (slave) over real sockets between two real MessageStores in one
process: byte-identical copies across segments, consume queues and index built on the slave from the
replicated bytes, SYNC_MASTER waiting, resuming after a reconnect, a master moving to a new address,
and refusing data that does not continue the slave's log."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker.services.replication import wake_streams_on_arrival
from orbitmq.message.record_decode import decode_record
from orbitmq.replication.frames import encode_transfer_header
from orbitmq.replication.master import HAService
from orbitmq.replication.slave import HAClient
from orbitmq.store import MessageStore

from .conftest import SEGMENT, commit_log_bytes, eventually, open_store, put_many, segment_files

FAST = {"heartbeat_interval": 0.2, "housekeeping_interval": 2.0}


@contextlib.asynccontextmanager
async def master_service(store: MessageStore) -> AsyncIterator[HAService]:
    ha = HAService(store, file_size=SEGMENT, transfer_batch_size=8 * 1024, **FAST)
    await ha.start()
    try:
        yield ha
    finally:
        await ha.stop()


@contextlib.asynccontextmanager
async def slave_client(store: MessageStore, address: str | None) -> AsyncIterator[HAClient]:
    client = HAClient(store, master_address=address, reconnect_interval=0.1, **FAST)
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


@pytest.fixture
def stores(tmp_path: Path) -> tuple[MessageStore, MessageStore]:
    master = open_store(tmp_path / "master")
    slave = open_store(tmp_path / "slave", role="SLAVE", port=10921)
    yield master, slave  # type: ignore[misc]
    slave.shutdown()
    master.shutdown()


def bodies(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    """Every message of the queue, from its min offset on."""
    out: list[bytes] = []
    offset = store.get_min_offset_in_queue(topic, queue_id)
    while offset < store.get_max_offset_in_queue(topic, queue_id):
        result = store.get_messages("g", topic, queue_id, offset, 1000)
        assert result.buffers, result.status
        out += [decode_record(b).body for b in result.buffers]
        result.buffers.clear()
        offset = result.next_begin_offset
    return out


async def test_slave_copies_the_log_byte_for_byte_and_builds_its_queues(
    stores: tuple[MessageStore, MessageStore], tmp_path: Path
) -> None:
    master, slave = stores
    head = put_many(master, 0, 5)
    async with master_service(master) as ha, slave_client(slave, ha.address) as client:
        await eventually(lambda: slave.get_max_phy_offset() == head, what="slave connection")
        end = put_many(master, 5, 200)  # ~200 KB: several 64 KiB segments, blank tails included
        await eventually(lambda: slave.get_max_phy_offset() == end, what="slave catch-up")
        await eventually(lambda: ha.slave_ack_offset == end, what="slave ack")
        assert client.connected and ha.connected_slaves == 1
    assert commit_log_bytes(slave) == commit_log_bytes(master)
    master.flush()
    slave.flush()
    assert segment_files(tmp_path / "slave") == segment_files(tmp_path / "master")
    # The slave's dispatcher built consume queues and the key index from the replicated bytes.
    for queue_id in (0, 1):
        assert bodies(slave, "Replicated", queue_id) == bodies(master, "Replicated", queue_id)
        assert slave.get_max_offset_in_queue("Replicated", queue_id) == 103 - queue_id
    found = slave.query_message("Replicated", "k42", 5, 0, 2**62)
    assert [decode_record(b).body[:8] for b in found.buffers] == [b"00000042"]
    found.buffers.clear()


async def test_wait_for_replication_is_released_by_the_slaves_ack(
    stores: tuple[MessageStore, MessageStore],
) -> None:
    master, slave = stores
    async with master_service(master) as ha:
        end = put_many(master, 0, 1)
        assert not ha.is_slave_ok(end)  # no slave connected: SYNC_MASTER answers SLAVE_NOT_AVAILABLE
        assert await ha.wait_for_replication(end, 0.2) is False
        async with slave_client(slave, ha.address):
            await eventually(lambda: ha.connected_slaves == 1, what="slave connection")
            end = put_many(master, 1, 3)
            ha.notify_new_data()
            assert await ha.wait_for_replication(end, 5.0) is True
            assert slave.get_max_phy_offset() >= end
            assert ha.is_slave_ok(end)
        await eventually(lambda: ha.connected_slaves == 0, what="slave gone")
        end = put_many(master, 4, 1)
        assert await ha.wait_for_replication(end, 0.3) is False  # FLUSH_SLAVE_TIMEOUT


async def test_slave_resumes_from_its_own_offset_after_a_reconnect(
    stores: tuple[MessageStore, MessageStore],
) -> None:
    master, slave = stores
    async with master_service(master) as ha:
        async with slave_client(slave, ha.address):
            await eventually(lambda: ha.connected_slaves == 1, what="slave connection")
            await asyncio.sleep(0.1)  # the first offset report (0: an empty log starts at segment 0)
            first = put_many(master, 0, 30)
            await eventually(lambda: slave.get_max_phy_offset() == first, what="first copy")
        second = put_many(master, 30, 100)  # written while the slave is away
        async with slave_client(slave, ha.address):
            await eventually(lambda: slave.get_max_phy_offset() == second, what="resumed copy")
            assert ha.slave_ack_offset == second or await ha.wait_for_replication(second, 5.0)
    assert commit_log_bytes(slave) == commit_log_bytes(master)
    assert bodies(slave, "Replicated", 1)[-1][:8] == b"00000129"


async def test_slave_follows_a_master_that_moved(stores: tuple[MessageStore, MessageStore]) -> None:
    master, slave = stores
    async with slave_client(slave, None) as client:
        async with master_service(master) as ha:
            client.update_master_address(ha.address)
            await eventually(lambda: ha.connected_slaves == 1, what="slave connection")
            await asyncio.sleep(0.1)
            end = put_many(master, 0, 10)
            await eventually(lambda: slave.get_max_phy_offset() == end, what="copy from the first address")
        async with master_service(master) as moved:  # a new port, as after a restart with listenPort=0
            client.update_master_address(moved.address)
            end = put_many(master, 10, 10)
            await eventually(lambda: slave.get_max_phy_offset() == end, what="copy from the new address")
    assert commit_log_bytes(slave) == commit_log_bytes(master)


class CountingProxy:
    """A TCP relay in front of the master's HA port: counts the connections it relays and the bytes the
    master sends, so a refusal is observed (the master hung up and the slave came back) instead of
    inferred from silence after a sleep."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.connections = 0
        self.closed_by_master = 0
        self.master_bytes = 0
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> CountingProxy:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return self

    @property
    def address(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _relay(self, s_reader: asyncio.StreamReader, s_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        host, _, port = self.target.rpartition(":")
        m_reader, m_writer = await asyncio.open_connection(host, int(port))
        self.writers += [s_writer, m_writer]

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, from_master: bool) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await src.read(65536):
                    if from_master:
                        self.master_bytes += len(data)
                    dst.write(data)
                    await dst.drain()
            if from_master:
                self.closed_by_master += 1
            dst.close()

        await asyncio.gather(pump(s_reader, m_writer, False), pump(m_reader, s_writer, True))

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.writers:
            w.close()
        await self.server.wait_closed()


async def test_master_refuses_a_slave_that_is_ahead_of_it(tmp_path: Path) -> None:
    master = open_store(tmp_path / "m")
    stranger = open_store(tmp_path / "s")  # written to directly, so not in the slave role
    try:
        put_many(master, 0, 2)
        put_many(stranger, 0, 20)  # a log longer than the master's: not a copy of it
        before = commit_log_bytes(stranger)
        async with (
            master_service(master) as ha,
            CountingProxy(ha.address) as proxy,
            slave_client(stranger, proxy.address) as client,
        ):
            # The event: the master hung up on the slave's report, and the slave came back to be refused
            # again.
            await eventually(
                lambda: proxy.closed_by_master >= 2 and proxy.connections >= 2, what="two refusals"
            )
            assert proxy.master_bytes == 0  # not one transfer (nor heartbeat) was sent to it
            assert ha.slave_ack_offset == 0
            assert client.master_address == proxy.address
        assert commit_log_bytes(stranger) == before
    finally:
        stranger.shutdown()
        master.shutdown()


async def test_slave_refuses_data_that_does_not_continue_its_log(tmp_path: Path) -> None:
    slave = open_store(tmp_path / "own-log")  # written to directly, so not in the slave role
    put_many(slave, 0, 3)
    own_end = slave.get_max_phy_offset()
    before = commit_log_bytes(slave)
    connections = 0
    reports: list[bytes] = []
    writers: list[asyncio.StreamWriter] = []

    async def bad_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writers.append(writer)
        reports.append(await reader.readexactly(8))
        # A frame from somewhere else in some other log: must close the connection, not be appended.
        writer.write(encode_transfer_header(own_end + 4096, 16) + b"x" * 16)
        await writer.drain()
        with contextlib.suppress(ConnectionError):
            await reader.read()  # until the slave hangs up
        writer.close()

    server = await asyncio.start_server(bad_master, "127.0.0.1", 0)
    address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with slave_client(slave, address):
            await eventually(lambda: connections >= 2, what="the slave reconnecting after the refusal")
        assert int.from_bytes(reports[0], "big") == own_end  # the report names the slave's own log end
        assert commit_log_bytes(slave) == before
    finally:
        server.close()
        for w in writers:
            w.close()
        await server.wait_closed()
        slave.shutdown()


async def test_empty_slave_starts_at_the_masters_last_segment(
    stores: tuple[MessageStore, MessageStore],
) -> None:
    master, slave = stores
    end = put_many(master, 0, 150)  # ~150 KB: the log is in its third 64 KiB segment
    last_segment = end - end % SEGMENT
    assert last_segment > 0
    async with master_service(master) as ha, slave_client(slave, ha.address):
        more = put_many(master, 150, 5)
        await eventually(lambda: slave.get_max_phy_offset() == more, what="slave copy of the last segment")
    assert slave.get_min_phy_offset() == last_segment
    assert commit_log_bytes(slave, last_segment) == commit_log_bytes(master, last_segment)
    assert bodies(slave, "Replicated", 0)[-1][:8] == b"00000154"


async def test_the_ha_port_closes_connections_past_its_cap(stores: tuple[MessageStore, MessageStore]) -> None:
    master, slave = stores
    head = put_many(master, 0, 5)
    ha = HAService(master, file_size=SEGMENT, max_connections=1, **FAST)
    await ha.start()
    try:
        host, port = ha.address.rsplit(":", 1)
        _, squatter = await asyncio.open_connection(host, int(port))  # holds the only slot, sends nothing
        await eventually(lambda: ha.connected_slaves == 1, what="the first connection")
        extra_reader, extra = await asyncio.open_connection(host, int(port))
        assert await asyncio.wait_for(extra_reader.read(1), 10) == b""  # closed on accept
        extra.close()
        assert ha.refused_connections == 1
        squatter.close()  # the slot is free again: a real slave connects and replicates
        await eventually(lambda: ha.connected_slaves == 0, what="the squatter to go")
        async with slave_client(slave, ha.address):
            await eventually(lambda: slave.get_max_phy_offset() == head, what="slave catch-up")
    finally:
        await ha.stop()


async def test_the_arrival_listener_hangs_on_the_store_only_while_a_slave_is_connected(
    stores: tuple[MessageStore, MessageStore],
) -> None:
    # The broker's wiring (broker/services/replication.py): no listener call per put without a slave.
    master, slave = stores
    ha = HAService(master, file_size=SEGMENT, **FAST)
    wake_streams_on_arrival(master, ha)
    before = list(master.dispatcher.listeners)
    await ha.start()
    try:
        assert master.dispatcher.listeners == before
        async with slave_client(slave, ha.address):
            await eventually(
                lambda: master.dispatcher.listeners == [*before, ha.notify_arrival], what="the first slave"
            )
            head = put_many(master, 0, 5)
            await eventually(lambda: slave.get_max_phy_offset() == head, what="slave copy")
        await eventually(lambda: master.dispatcher.listeners == before, what="the last slave to leave")
    finally:
        await ha.stop()
