"""Socket addresses as a record stores them: IP bytes (4 for IPv4, 16 for IPv6) + port as a 4-byte int.

BORNHOST and STOREHOSTADDRESS in a record, the store-host part of an offset message id and the ip part of
a UNIQ_KEY all use these bytes. Text form is "ip:port" ("[v6]:port" for IPv6).

Parsing uses the `ipaddress` module only: this layer never touches sockets.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Final

from orbitmq.common.errors import ClientError

HOST_V4_SIZE: Final = 8
HOST_V6_SIZE: Final = 20


@lru_cache(maxsize=1024)
def pack_host(ip: str, port: int) -> bytes:
    """The 8-byte (IPv4) or 20-byte (IPv6) host field for `ip` and `port`."""
    text = ip[1:-1] if ip.startswith("[") and ip.endswith("]") else ip
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ClientError(f"not an IP address: {ip!r}") from None
    if not 0 <= port <= 0xFFFF:
        raise ClientError(f"port out of range: {port}")
    return address.packed + port.to_bytes(4, "big")


def split_address(address: str) -> tuple[str, int]:
    """`("ip", port)` of "ip:port" or "[v6]:port"."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ClientError(f"not an ip:port address: {address!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def pack_address(address: str) -> bytes:
    """The host field of an "ip:port" address."""
    return pack_host(*split_address(address))


def unpack_host(b: bytes | bytearray | memoryview) -> tuple[str, int]:
    """`(ip, port)` of an 8- or 20-byte host field."""
    return _unpack_host(bytes(b))


@lru_cache(maxsize=1024)
def _unpack_host(b: bytes) -> tuple[str, int]:
    if len(b) == HOST_V4_SIZE:
        return str(ipaddress.IPv4Address(b[:4])), int.from_bytes(b[4:], "big", signed=True)
    if len(b) == HOST_V6_SIZE:
        return str(ipaddress.IPv6Address(b[:16])), int.from_bytes(b[16:], "big", signed=True)
    raise ClientError(f"a host field is 8 or 20 bytes, not {len(b)}")


def host_string(b: bytes | bytearray | memoryview) -> str:
    """ "ip:port" ("[v6]:port") of an 8- or 20-byte host field."""
    return host_string_of(bytes(b))


@lru_cache(maxsize=1024)
def host_string_of(b: bytes) -> str:
    """`host_string` of an immutable host field, cached (hosts repeat across records)."""
    ip, port = _unpack_host(b)
    return f"[{ip}]:{port}" if len(b) == HOST_V6_SIZE else f"{ip}:{port}"
