"""The HA wire format between a master and its slave (RocketMQ 4.x HAService), sans-IO.

Plain TCP on the master's HA port, no remoting framing and no handshake:

    slave -> master   offset report    [ long slave max physical offset ]            8 bytes
    master -> slave   transfer         [ long master physical offset | int size ]    12 bytes, then
                                       size bytes of raw commit log
    master -> slave   heartbeat        a transfer header with size 0 (offset = next transfer offset)

All integers big-endian. This module only turns bytes into values and back; it knows nothing of
sockets, the store or timing.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from orbitmq.common.errors import RemoteProtocolError

OFFSET_REPORT_SIZE = 8
TRANSFER_HEADER_SIZE = 12
# A master sends at most haTransferBatchSize bytes per frame; a slave refuses frames far beyond that so a
# corrupt header cannot make it buffer gigabytes.
MAX_TRANSFER_BODY = 64 * 1024 * 1024

_LONG = struct.Struct(">q")
_HEADER = struct.Struct(">qi")
# Controller mode: a slave names its broker id first (16 bytes), so the master can tell which replica of
# the SyncStateSet acknowledged what. The magic is negative: never a valid offset report.
SLAVE_HELLO_MAGIC = -0x4F52424D51484131
_HELLO = struct.Struct(">qq")
SLAVE_HELLO_SIZE = _HELLO.size


def encode_slave_hello(broker_id: int) -> bytes:
    return _HELLO.pack(SLAVE_HELLO_MAGIC, broker_id)


# The master's answer to a hello: its epoch file and max offset, [long maxOffset | int count] then count
# times [int epoch | long startOffset]; the slave cuts what its log holds past the last agreeing epoch.
_EPOCHS_HEAD = struct.Struct(">qi")
_EPOCH = struct.Struct(">iq")
EPOCHS_HEAD_SIZE = _EPOCHS_HEAD.size
EPOCH_SIZE = _EPOCH.size
MAX_EPOCHS = 1 << 20


def encode_epochs(entries: list[tuple[int, int]], max_offset: int) -> bytes:
    return _EPOCHS_HEAD.pack(max_offset, len(entries)) + b"".join(_EPOCH.pack(e, s) for e, s in entries)


def decode_epochs_head(data: bytes) -> tuple[int, int]:
    """(master max offset, number of epoch entries that follow)."""
    max_offset, count = _EPOCHS_HEAD.unpack(data)
    if max_offset < 0 or not 0 <= count <= MAX_EPOCHS:
        raise RemoteProtocolError(f"broken epoch list header: maxOffset={max_offset} count={count}")
    return int(max_offset), int(count)


def decode_epochs(data: bytes) -> list[tuple[int, int]]:
    return [(int(e), int(s)) for e, s in _EPOCH.iter_unpack(data)]


def decode_slave_hello(data: bytes) -> int:
    """The broker id a controller-mode slave sends before its first offset report."""
    magic, broker_id = _HELLO.unpack(data)
    if magic != SLAVE_HELLO_MAGIC or broker_id < 1:
        raise RemoteProtocolError("an HA slave in controller mode must name its broker id first")
    return int(broker_id)


def encode_offset_report(offset: int) -> bytes:
    return _LONG.pack(offset)


def encode_transfer_header(master_offset: int, body_size: int) -> bytes:
    return _HEADER.pack(master_offset, body_size)


class OffsetReportDecoder:
    """Master side: reads the slave's 8-byte reports; only the newest complete report matters."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> int | None:
        """Returns the newest complete report in `data` (with what was buffered), or None if none."""
        buf = self._pending + data
        complete = len(buf) - len(buf) % OFFSET_REPORT_SIZE
        self._pending = buf[complete:]
        if complete == 0:
            return None
        offset: int = _LONG.unpack_from(buf, complete - OFFSET_REPORT_SIZE)[0]
        if offset < 0:
            raise RemoteProtocolError(f"slave reported a negative offset {offset}")
        return offset


@dataclass(frozen=True, slots=True)
class Transfer:
    """One master frame: `data` continues the master's log at `master_offset` (empty = heartbeat)."""

    master_offset: int
    data: bytes

    @property
    def is_heartbeat(self) -> bool:
        return not self.data


class TransferDecoder:
    """Slave side: splits the master's stream into transfers, whatever the chunking."""

    __slots__ = ("_buffer", "_max_body")

    def __init__(self, max_body: int = MAX_TRANSFER_BODY) -> None:
        self._buffer = bytearray()
        self._max_body = max_body

    def feed(self, data: bytes) -> list[Transfer]:
        self._buffer += data
        out: list[Transfer] = []
        pos = 0
        buf = self._buffer
        while len(buf) - pos >= TRANSFER_HEADER_SIZE:
            offset, size = _HEADER.unpack_from(buf, pos)
            if offset < 0 or size < 0 or size > self._max_body:
                raise RemoteProtocolError(f"broken HA transfer header: offset={offset} size={size}")
            end = pos + TRANSFER_HEADER_SIZE + size
            if len(buf) < end:
                break
            out.append(Transfer(offset, bytes(buf[pos + TRANSFER_HEADER_SIZE : end])))
            pos = end
        if pos:
            del buf[:pos]
        return out


def transfer_start_offset(reported_offset: int, master_max_offset: int, file_size: int) -> int:
    """Where the master starts streaming to a newly connected slave.

    A slave reporting 0 has no log: it gets the start of the master's last commit-log segment (as RocketMQ
    does), not the whole history. Otherwise streaming resumes at the slave's own offset.
    """
    if reported_offset > master_max_offset:
        raise RemoteProtocolError(
            f"slave reports offset {reported_offset} beyond the master's max offset {master_max_offset}"
        )
    if reported_offset == 0:
        return master_max_offset - master_max_offset % file_size
    return reported_offset


def continues_log(slave_max_offset: int, transfer: Transfer) -> bool:
    """A slave appends a transfer only if it continues its log exactly (an empty slave takes any start)."""
    return slave_max_offset == 0 or slave_max_offset == transfer.master_offset
