"""The gRPC endpoint for RocketMQ 5.x clients: RocketMQ 5's proxy in local mode, inside the broker.

It serves apache.rocketmq.v2.MessagingService with grpc.aio on the broker's event loop and hands each
request to the broker's own processors through an in-process remoting connection (`local_channel`), so
what 5.x clients send is stored exactly as a 4.x send. Needs the `grpc` extra (grpcio, protobuf).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orbitmq.proxy.backend import LocalBroker
    from orbitmq.proxy.server import GrpcEndpoint


async def start_grpc_endpoint(broker: LocalBroker, port: int, host: str | None = None) -> GrpcEndpoint:
    """Serve the gRPC endpoint for `broker` on `port` (0: a free one); `await endpoint.stop()` ends it.
    Without grpcio installed: a ValueError naming the extra to install."""
    try:
        from orbitmq.proxy import server
    except ModuleNotFoundError as exc:
        raise ValueError(
            f"the gRPC endpoint needs the grpc extra (pip install 'orbitmq[grpc]'): {exc}"
        ) from None
    return await server.start_grpc_endpoint(broker, port, host)


__all__ = ["start_grpc_endpoint"]
