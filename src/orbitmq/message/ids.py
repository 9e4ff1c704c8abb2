"""Message ids: the broker's offset message id (fact sheet 5.5) and the client's UNIQ_KEY (5.6).

- Offset id: store-host IP bytes (4 or 16) + port (int) + commit-log physical offset (long), uppercase
  hex: 32 chars for IPv4, 56 for IPv6. It locates a message: `decode_offset_msg_id` gives the broker
  address and the offset to look the message up by.
- UNIQ_KEY: ip (4 bytes) + pid (low 16 bits) + a per-process random int (RocketMQ uses its class loader's
  hash: any per-process value) + ms since the start of the current month in local time (int) + a
  per-process counter (low 16 bits), uppercase hex, 32 chars. Peers never parse it except for
  diagnostics, so any ip bytes are acceptable.

This layer never touches sockets: the ip of a UNIQ_KEY is whatever the caller passes (the client passes
its local address); the default is 127.0.0.1.
"""

from __future__ import annotations

import itertools
import os
import secrets
import struct
import threading
from datetime import datetime
from typing import Final, NamedTuple

from orbitmq.common.clock import SYSTEM_CLOCK
from orbitmq.common.errors import ClientError
from orbitmq.message.hosts import HOST_V4_SIZE, HOST_V6_SIZE, pack_host, unpack_host

_LONG: Final = struct.Struct(">q")


_HOST_HEX: Final[dict[bytes, str]] = {}


def offset_msg_id(store_host: bytes, physical_offset: int) -> str:
    """The offset message id of the record at `physical_offset` on the broker at `store_host` (pack_host)."""
    # One per send response: the host part is formatted once per broker address, the offset with "X".
    prefix = _HOST_HEX.get(store_host)
    if prefix is None:
        if len(_HOST_HEX) > 1024:
            _HOST_HEX.clear()
        prefix = _HOST_HEX[bytes(store_host)] = bytes(store_host).hex().upper()
    # The offset as a Java long, big-endian, in hex (struct.error beyond a long). Not an f-string with a
    # format spec: compiled by mypyc, `f"{offset:016X}"` is the slower of the two.
    return prefix + _LONG.pack(physical_offset).hex().upper()


_ids_structs: Final[dict[tuple[int, int], struct.Struct]] = {}


def offset_msg_ids(store_host: bytes, physical_offsets: list[int]) -> str:
    """`offset_msg_id` of each offset, joined by "," (a batch's send response): the host and offset
    pairs packed in one struct call and hex-formatted in one `bytes.hex` with a separator per id."""
    n = len(physical_offsets)
    host_len = len(store_host)
    if not n or not all(0 <= o <= 0x7FFFFFFFFFFFFFFF for o in physical_offsets):
        return ",".join([offset_msg_id(store_host, o) for o in physical_offsets])
    key = (n, host_len)
    packer = _ids_structs.get(key)
    if packer is None:
        if len(_ids_structs) > 256:
            _ids_structs.clear()
        packer = _ids_structs[key] = struct.Struct(">" + f"{host_len}sq" * n)
    args: list[object] = []
    for o in physical_offsets:
        args.append(store_host)
        args.append(o)
    return packer.pack(*args).hex(",", host_len + 8).upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """`(ip, port, physical_offset)` of an offset message id; ClientError if it is not one."""
    if len(msg_id) not in (2 * (HOST_V4_SIZE + 8), 2 * (HOST_V6_SIZE + 8)):
        raise ClientError(f"not an offset message id (32 or 56 hex chars expected): {msg_id!r}")
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise ClientError(f"not an offset message id (not hex): {msg_id!r}") from None
    ip, port = unpack_host(raw[:-8])
    return ip, port, _LONG.unpack(raw[-8:])[0]


def _month_start_ms(now_ms: int) -> tuple[int, int]:
    """(start of this month, start of next month) in epoch ms, local time."""
    # Naive local datetimes: .timestamp() resolves each in its own UTC offset, so DST is honoured.
    start = datetime.fromtimestamp(now_ms / 1000).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return int(start.timestamp() * 1000), int(following.timestamp() * 1000)


class UniqueIdGenerator:
    """UNIQ_KEY generator; thread-safe. One per process is enough (`new_unique_id` uses a shared one)."""

    def __init__(
        self, ip: str | bytes = "127.0.0.1", *, pid: int | None = None, salt: int | None = None
    ) -> None:
        ip_bytes = ip if isinstance(ip, bytes) else pack_host(ip, 0)[:-4]
        process = os.getpid() if pid is None else pid
        random_int = secrets.randbits(32) if salt is None else salt & 0xFFFFFFFF
        self._prefix = (ip_bytes + struct.pack(">HI", process & 0xFFFF, random_int)).hex().upper()
        self.owner_pid = os.getpid()  # the process that made it: a forked child needs its own
        # Lock-free: next() on an itertools.count is atomic under the GIL, and the month window is one
        # tuple replaced whole, so concurrent callers never see half of an update.
        self._count = itertools.count()
        self._month = (0, 0)

    @property
    def prefix(self) -> str:
        """The fixed per-process part: ip + pid + random int (20 hex chars for an IPv4 ip)."""
        return self._prefix

    def next(self, now_ms: int | None = None) -> str:
        """A new UNIQ_KEY (`now_ms` defaults to the wall clock)."""
        now = SYSTEM_CLOCK.now_ms() if now_ms is None else now_ms
        month = self._month
        if not month[0] <= now < month[1]:
            month = self._month = _month_start_ms(now)
        counter = next(self._count) & 0xFFFF
        # elapsed (8 hex) and counter (4 hex) as one 48-bit number in one %-format: compiled, two
        # format specs in an f-string cost about twice as much (one per message sent).
        return self._prefix + "%012X" % ((((now - month[0]) & 0xFFFFFFFF) << 16) | counter)


class UniqueIdInfo(NamedTuple):
    ip: str
    pid: int
    elapsed_ms: int  # ms since the start of the month the id was made in (local time of its producer)
    counter: int


def parse_unique_id(uniq_key: str) -> UniqueIdInfo:
    """The parts of a UNIQ_KEY (diagnostics only; ClientError if it is not 32 or 56 hex chars)."""
    if len(uniq_key) not in (32, 56):
        raise ClientError(f"not a unique message id (32 or 56 hex chars expected): {uniq_key!r}")
    try:
        raw = bytes.fromhex(uniq_key)
    except ValueError:
        raise ClientError(f"not a unique message id (not hex): {uniq_key!r}") from None
    ip_len = 4 if len(raw) == 16 else 16
    ip, _ = unpack_host(raw[:ip_len] + b"\0\0\0\0")
    pid, _, elapsed, counter = struct.unpack(">HIIH", raw[ip_len:])
    return UniqueIdInfo(ip, pid, elapsed, counter)


_default: UniqueIdGenerator | None = None
_default_lock: Final = threading.Lock()


def configure_unique_ids(ip: str | bytes) -> None:
    """Make `new_unique_id` put `ip` (the client's local address) into the ids it makes from now on."""
    global _default
    with _default_lock:
        _default = UniqueIdGenerator(ip)


def new_unique_id() -> str:
    """A UNIQ_KEY from the process-wide generator (created on first use; re-created after a fork)."""
    global _default
    generator = _default
    if generator is None or generator.owner_pid != os.getpid():
        with _default_lock:
            if _default is None or _default.owner_pid != os.getpid():
                _default = UniqueIdGenerator()
            generator = _default
    return generator.next()
