"""Who is calling: the 5.x client's metadata headers (x-mq-client-id, x-mq-language, ...) and its address."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import grpc

from orbitmq.proxy.status import Code, ProxyError

CLIENT_ID: Final = "x-mq-client-id"
LANGUAGE: Final = "x-mq-language"
CLIENT_VERSION: Final = "x-mq-client-version"
PROTOCOL: Final = "x-mq-protocol"
NAMESPACE: Final = "x-mq-namespace"
REQUEST_ID: Final = "x-mq-request-id"
DATE_TIME: Final = "x-mq-date-time"
AUTHORIZATION: Final = "authorization"


@dataclass(frozen=True, slots=True)
class CallContext:
    client_id: str
    language: str
    client_version: str
    namespace: str
    peer: tuple[str, int]
    headers: dict[str, str]

    @classmethod
    def of(cls, context: grpc.aio.ServicerContext[object, object]) -> CallContext:
        headers = {key: _text(value) for key, value in context.invocation_metadata() or ()}
        return cls(
            client_id=headers.get(CLIENT_ID, ""),
            language=headers.get(LANGUAGE, ""),
            client_version=headers.get(CLIENT_VERSION, ""),
            namespace=headers.get(NAMESPACE, ""),
            peer=parse_peer(context.peer()),
            headers=headers,
        )

    def require_client_id(self) -> str:
        """The client id, which every call must carry (RocketMQ answers CLIENT_ID_REQUIRED without)."""
        if not self.client_id.strip():
            raise ProxyError(Code.CLIENT_ID_REQUIRED, f"the {CLIENT_ID} header is missing")
        return self.client_id


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def parse_peer(peer: str) -> tuple[str, int]:
    """grpc's peer text ('ipv4:127.0.0.1:5000', 'ipv6:[::1]:5000') -> (host, port); ('0.0.0.0', 0) if odd."""
    _, _, address = peer.partition(":")
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return ("0.0.0.0", 0)
    return (host.strip("[]"), int(port))
