"""One error hierarchy for orbitmq; each class says whose fault the failure is: the peer's
(RemoteProtocolError), the caller's (ClientError), a server's answer (BrokerError), the network's
(ConnectError, RequestTimeoutError) or the store's (StoreError). Catch OrbitError for all of them.
"""

from __future__ import annotations


class OrbitError(Exception):
    """Root of every error orbitmq raises on purpose."""


class RemoteProtocolError(OrbitError):
    """The peer broke the remoting protocol (framing, header or body encoding)."""


class ClientError(OrbitError, ValueError):
    """The caller's input is invalid; nothing was sent."""


class BrokerError(OrbitError):
    """A server answered with a non-success response code."""

    def __init__(self, code: int, remark: str | None, *, address: str | None = None) -> None:
        self.code = code
        self.remark = remark
        self.address = address
        where = f" from {address}" if address else ""
        super().__init__(f"response code {code}{where}: {remark or ''}")


class ConnectError(OrbitError, ConnectionError):
    """A connection could not be opened or was lost while a request was in flight."""


class RequestTimeoutError(OrbitError, TimeoutError):
    """A request got no response within its timeout."""


class StoreError(OrbitError):
    """The store could not complete an operation (corrupt or inconsistent files, I/O failure)."""
