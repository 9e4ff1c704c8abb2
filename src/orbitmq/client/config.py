"""ClientConfig: what every producer and consumer of one client instance shares (fact sheet 7.5).

Pure values; no I/O beyond reading the environment and the local host name (and, for TLS, the
certificate files when the ssl context is built).
"""

from __future__ import annotations

import itertools
import os
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field

from orbitmq.common.errors import ClientError
from orbitmq.transport.tls import TlsClientSettings

_instance_counter = itertools.count()


def parse_namesrv_addrs(addrs: str | Sequence[str] | None) -> list[str]:
    """`"a:9876;b:9876"` (RocketMQ's separator), a list, or NAMESRV_ADDR from the environment.

    Every entry must be `host:port` (an IPv6 host in brackets); anything else raises ClientError (a
    ValueError) naming the bad part, so a typo fails at construction instead of as "No route info"
    at the first send."""
    source = "NAMESRV_ADDR" if addrs is None else "namesrv address"
    if addrs is None:
        addrs = os.environ.get("NAMESRV_ADDR", "")
    if isinstance(addrs, str):
        addrs = addrs.replace(",", ";").split(";")
    parts = [a.strip() for a in addrs if a and a.strip()]
    for part in parts:
        problem = address_problem(part)
        if problem:
            raise ClientError(f"{source} {part!r}: {problem}{_hint(part, parts)}")
    return parts


def address_problem(address: str) -> str | None:
    """Why `address` is not a usable `host:port`, or None when it is."""
    if "://" in address:
        return "no URL scheme here, write host:port"
    if any(c.isspace() for c in address) or "/" in address:
        return "write host:port (no spaces or paths)"
    host, sep, port = address.rpartition(":")
    if not sep:
        return "no port (write host:port, ';' between several)"
    if host.startswith("["):
        if not host.endswith("]") or len(host) < 3:
            return "an IPv6 host must be written [addr]:port"
    elif ":" in host:
        return "an IPv6 host must be written [addr]:port"
    if not host:
        return "no host (write host:port)"
    if not (port.isascii() and port.isdigit()):
        return f"port {port!r} is not a number"
    if not 0 < int(port) < 65536:
        return f"port {port} is out of range (1-65535)"
    return None


def _hint(part: str, parts: list[str]) -> str:
    """ "127.0.0.1;9876" is the classic typo for "127.0.0.1:9876": suggest it."""
    index = parts.index(part)
    if ":" not in part and index + 1 < len(parts) and parts[index + 1].isdigit():
        return f" (did you mean '{part}:{parts[index + 1]}'?)"
    return ""


def local_ip() -> str:
    """This host's address as its name resolves (only used inside the client id); 127.0.0.1 if none."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def default_instance_name() -> str:
    """RocketMQ replaces the instance name "DEFAULT" by `pid#nanotime`; a counter keeps several
    clients of one process apart, which every consumer of a group must be."""
    return f"{os.getpid()}#{next(_instance_counter)}#{os.times().elapsed * 1e9:.0f}"


@dataclass(slots=True)
class ClientConfig:
    """The settings one ClientInstance (its producers and consumers) shares."""

    namesrv_addrs: list[str] = field(default_factory=list)
    """Nameserver addresses, host:port; empty: NAMESRV_ADDR from the environment (namesrvAddr)."""
    instance_name: str = field(default_factory=default_instance_name)
    """Part of the client id; unique per process by default (instanceName)."""
    client_ip: str = field(default_factory=local_ip)
    """This host's address in the client id (clientIP)."""
    unit_name: str | None = None
    """Appended to the client id when set (unitName)."""
    poll_namesrv_interval: float = 30.0
    """Seconds between route refreshes from the nameserver (pollNameServerInterval)."""
    heartbeat_interval: float = 30.0
    """Seconds between heartbeats to every broker (heartbeatBrokerInterval)."""
    persist_offset_interval: float = 5.0
    """Seconds between commits of consumer offsets (persistConsumerOffsetInterval)."""
    rebalance_interval: float = 20.0
    """Seconds between rebalances of the consumers' queues (rebalance service interval)."""
    api_timeout: float = 3.0
    """Seconds for heartbeats, route fetches, unregistering and consumer lists (mqClientApiTimeout)."""
    access_key: str | None = None
    """ACL access key: when set, every request is signed (AclClientRPCHook)."""
    secret_key: str | None = None
    """ACL secret key, signing the requests."""
    security_token: str | None = None
    """ACL security token, sent with signed requests when set."""
    tls: bool | TlsClientSettings = False
    """TLS to nameservers and brokers: True (no server verification, as RocketMQ's default
    tls.client.authServer=false) or a TlsClientSettings."""
    busy_poll_us: float = 200.0
    """orbitmq's own: the most microseconds the client keeps polling for an answer instead of sleeping;
    the window adapts to how soon answers come (transport/busy_poll.py). 0: never poll."""
    direct_socket_max_idle: float = 60.0
    """orbitmq's own: seconds one of the blocking Producer's own sockets may rest before it is replaced;
    keep it under the broker's serverChannelMaxIdleTimeSeconds (120 s)."""

    def __post_init__(self) -> None:
        if not self.direct_socket_max_idle > 0:  # (also refuses NaN)
            value = self.direct_socket_max_idle
            raise ClientError(f"direct_socket_max_idle must be a number of seconds above 0, got {value!r}")

    def set_security(
        self,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        tls: bool | TlsClientSettings | None = None,
    ) -> None:
        """Apply the security options a producer or consumer was given (None keeps the current)."""
        if access_key is not None:
            self.access_key = access_key
        if secret_key is not None:
            self.secret_key = secret_key
        if security_token is not None:
            self.security_token = security_token
        if tls is not None:
            self.tls = tls

    def tls_context(self) -> ssl.SSLContext | None:
        tls = self.tls
        if tls is False:
            return None
        settings = TlsClientSettings(enable=True) if tls is True else tls
        return settings.context()

    @property
    def client_id(self) -> str:
        cid = f"{self.client_ip}@{self.instance_name}"
        return f"{cid}@{self.unit_name}" if self.unit_name else cid
