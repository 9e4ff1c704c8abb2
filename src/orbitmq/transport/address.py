"""Addresses as remoting writes them: 'ip:port' strings (RocketMQ's form), IPv6 hosts included."""

from __future__ import annotations


def split_address(address: str) -> tuple[str, int]:
    """'ip:port' -> (ip, port); the port is after the last colon (IPv6 hosts keep their colons)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"bad address {address!r}, expected ip:port")
    return host.strip("[]"), int(port)


def format_peer(peer: object) -> str:
    """A socket's peername/sockname as 'ip:port'."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)
