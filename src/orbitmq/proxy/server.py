"""The gRPC server: grpc.aio on the broker's event loop, bound to the broker's IP (brokerIP1).

`start_grpc_endpoint(broker, port)` is the one call a start-up makes (`orbitmq serve --grpc-port N`,
`grpcServerPort` in broker.conf; port 0 picks a free one); `address` is what its line announces. With
tls.server.mode=enforcing the port takes TLS only, with the broker's certificate.
"""

from __future__ import annotations

import errno
import logging
from pathlib import Path
from typing import Final

import grpc

from orbitmq.proxy.backend import LocalBroker
from orbitmq.proxy.service import MessagingService
from orbitmq.transport.tls import TlsMode, TlsServerSettings

log: Final = logging.getLogger("orbitmq.proxy")

# RocketMQ 5 proxy's grpcMaxInboundMessageSize: a request bigger than this is refused by grpc itself.
MAX_INBOUND_MESSAGE_SIZE: Final = 130 * 1024 * 1024
STOP_GRACE_S: Final = 2.0


class GrpcEndpoint:
    def __init__(self, broker: LocalBroker, host: str, port: int) -> None:
        self.host = host
        self._requested_port = port
        self.port = 0
        self._broker = broker
        self._server: grpc.aio.Server | None = None
        self.service: MessagingService | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def start(self) -> None:
        credentials = server_credentials(TlsServerSettings.from_properties(self._broker.config.extra))
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", MAX_INBOUND_MESSAGE_SIZE),
                ("grpc.so_reuseport", 0),
            ]
        )
        try:
            address = f"{self.host}:{self._requested_port}"
            if credentials is None:
                port = server.add_insecure_port(address)
            else:
                port = server.add_secure_port(address, credentials)
        except RuntimeError:  # grpc's "failed to bind"
            port = 0
        if port == 0:
            raise OSError(errno.EADDRINUSE, f"grpc cannot listen on {self.host}:{self._requested_port}")
        self.port = port
        self.service = MessagingService(self._broker, port)
        server.add_generic_rpc_handlers((self.service.generic_handler(),))
        await server.start()
        self._server = server
        log.info("grpc listening on %s", self.address)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.stop(STOP_GRACE_S)
        if self.service is not None:
            self.service.close()


def server_credentials(settings: TlsServerSettings) -> grpc.ServerCredentials | None:
    """TLS for the endpoint from the broker's tls.server.* keys when it enforces TLS. One gRPC port
    cannot take both plaintext and TLS: with tls.server.mode=permissive it stays plaintext."""
    if settings.mode is not TlsMode.ENFORCING:
        return None
    if settings.key_password:
        raise ValueError(
            "the gRPC endpoint needs an unencrypted key: tls.server.keyPassword is not supported"
        )
    if settings.key_path is None or settings.cert_path is None:
        raise ValueError("tls.server.mode=enforcing needs tls.server.certPath and tls.server.keyPath")
    roots = None
    if settings.need_client_auth != "none" and settings.trust_cert_path is not None:
        roots = Path(settings.trust_cert_path).read_bytes()
    return grpc.ssl_server_credentials(
        [(Path(settings.key_path).read_bytes(), Path(settings.cert_path).read_bytes())],
        root_certificates=roots,
        require_client_auth=settings.need_client_auth == "require",
    )


async def start_grpc_endpoint(broker: LocalBroker, port: int, host: str | None = None) -> GrpcEndpoint:
    """Serve MessagingService for `broker` on `port` (0: a free one); stop it with `await .stop()`."""
    endpoint = GrpcEndpoint(broker, host or broker.config.broker_ip1, port)
    await endpoint.start()
    return endpoint
