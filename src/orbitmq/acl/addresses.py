"""White remote address patterns of plain_acl.yml (RocketMQ's RemoteAddressStrategyFactory).

Each pattern is compiled once into a matcher of the client's IP (no port), so a request costs one
call; a pattern RocketMQ would refuse raises AclError.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

from orbitmq.acl.errors import AclError

Matcher = Callable[[str], bool]


def _normalize(address: str) -> str | None:
    """The canonical text of an IP address (IPv6 exploded, upper case), or None if it is not one."""
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return ip.exploded.upper()
    return str(ip)


def _exact(address: str) -> str:
    normalized = _normalize(address)
    if normalized is None:
        raise AclError(f"Netaddress examine Exception netaddress is {address}")
    return normalized


@dataclass(frozen=True, slots=True)
class _Range:
    lo: int
    hi: int

    def contains(self, value: int) -> bool:
        return self.lo <= value <= self.hi


def _segment(text: str, base: int, top: int, pattern: str) -> _Range | int:
    text = text.strip()
    if text == "*":
        return _Range(0, top)
    try:
        if "-" in text:
            lo_text, _, hi_text = text.partition("-")
            lo, hi = int(lo_text, base), int(hi_text, base)
            if not (0 <= lo <= hi <= top) or not lo_text:
                raise ValueError
            return _Range(lo, hi)
        value = int(text, base)
    except ValueError:
        raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception {pattern}") from None
    if not 0 <= value <= top:
        raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception {pattern}")
    return value


def _range_matcher(pattern: str) -> Matcher:
    ipv6 = ":" in pattern
    parts = pattern.split(":") if ipv6 else pattern.split(".")
    count, base, top = (8, 16, 0xFFFF) if ipv6 else (4, 10, 255)
    # A shortened pattern ("10.1.*") stands for the rest of the address as wildcards.
    parts = [p for p in parts if p != ""] if ipv6 else parts
    if len(parts) > count or not parts or parts[0].strip() in ("*", "") or "-" in parts[0]:
        raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception {pattern}")
    parts += ["*"] * (count - len(parts))
    segments = [_segment(p, base, top, pattern) for p in parts]
    wild = next(i for i, s in enumerate(segments) if isinstance(s, _Range))
    if any(not isinstance(s, _Range) or s != _Range(0, top) for s in segments[wild + 1 :]):
        raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception {pattern}")

    def match(address: str) -> bool:
        normalized = _normalize(address)
        if normalized is None or (":" in normalized) != ipv6:
            return False
        values = normalized.split(":") if ipv6 else normalized.split(".")
        for segment, text in zip(segments, values, strict=True):
            value = int(text, base)
            if isinstance(segment, _Range):
                if not segment.contains(value):
                    return False
            elif segment != value:
                return False
        return True

    return match


def _braces(pattern: str) -> list[str]:
    ipv6 = ":" in pattern
    sep = ":" if ipv6 else "."
    head, _, last = pattern.rpartition(sep)
    if not last.startswith("{") or (not ipv6 and len(pattern.split(".")) < 4):
        raise AclError(f"MultipleRemoteAddressStrategy netaddress examine scope Exception {pattern}")
    return [f"{head}{sep}{value.strip()}" for value in last[1:-1].split(",") if value.strip()]


def compile_pattern(pattern: object) -> Matcher:
    """A matcher for one plain_acl.yml address pattern, matched against the client's IP:
    - blank: matches nothing; `*`, `*.*.*.*`, `*:*:*:*:*:*:*:*`: matches everything;
    - ending in `}`: the last segment lists values, `192.168.0.{1,2,3}`;
    - containing `,`: a set of exact addresses;
    - containing `*` or `-`: per segment, `*` any value and `lo-hi` an inclusive range (IPv4 segments in
      decimal, IPv6 hextets in hex); the segments before the first wildcard are exact;
    - otherwise one exact address. IPv6 addresses compare in their fully expanded form.
    """
    text = "" if pattern is None else str(pattern).strip()
    if not text:
        return lambda _address: False
    if text in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return lambda _address: True
    if text.endswith("}"):
        members = frozenset(_exact(a) for a in _braces(text))
        return lambda address: _normalize(address) in members
    if "," in text:
        members = frozenset(_exact(a) for a in text.split(",") if a.strip())
        return lambda address: _normalize(address) in members
    if "*" in text or "-" in text:
        return _range_matcher(text)
    single = _exact(text)
    return lambda address: _normalize(address) == single


def host_of(remote_address: str) -> str:
    """'ip:port' -> 'ip' (the part before the last colon, as PlainAccessValidator.parse cuts it)."""
    host, sep, _port = remote_address.rpartition(":")
    return host.strip("[]") if sep else remote_address
