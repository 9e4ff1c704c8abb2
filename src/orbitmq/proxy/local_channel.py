"""In-process remoting connections from the proxy to its broker (RocketMQ 5's local mode).

A `LocalChannel` is a real transport `Connection` whose transport is memory: a request is fed to it as
the bytes a socket would deliver, so the broker's dispatcher, processors, store write barrier and
after-turn dispatch run exactly as for a TCP client, and the answer's bytes come back through the
transport's `writelines` into a frame decoder. One channel per 5.x client id: the broker sees each
client as one connection (its address is the client's), as it sees a 4.x client.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterable
from typing import Any, Final

from orbitmq.acl.errors import AclError
from orbitmq.acl.validator import PlainAccessValidator
from orbitmq.protocol.acl_sign import sign_ext_fields
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.protocol.frames import FrameDecoder
from orbitmq.proxy.auth import refusal
from orbitmq.transport.connection import Buffer, Connection
from orbitmq.transport.server import RemotingServer

DEFAULT_MAX_CHANNELS: Final = 10000  # clients with a channel at once; the least recently used goes

# The broker calling a client (a transaction check, a consumer-ids notice): (client id, request).
BrokerRequestHandler = Callable[[str, RemotingCommand], None]


class _MemoryTransport(asyncio.Transport):
    """The broker side of a local channel: what the connection writes goes to `sink`."""

    def __init__(self, peer: tuple[str, int], local: tuple[str, int], sink: Callable[[Buffer], None]) -> None:
        super().__init__(extra={"peername": peer, "sockname": local})
        self._sink = sink
        self._closing = False
        self.protocol: Connection | None = None

    def write(self, data: Any) -> None:
        self._sink(data)

    def writelines(self, list_of_data: Iterable[Any]) -> None:
        for piece in list_of_data:
            self._sink(piece)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            if self.protocol is not None:
                asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


class LocalChannel:
    """One client's connection to the broker in this process; `invoke` sends a request, returns the answer."""

    def __init__(
        self,
        server: RemotingServer,
        peer: tuple[str, int],
        name: str,
        on_request: BrokerRequestHandler | None = None,
        acl: PlainAccessValidator | None = None,
    ) -> None:
        self.name = name
        self._on_request = on_request
        # With aclEnable: every request passes the broker's check, signed with the client's verified
        # account (auth.py) when it has one.
        self._acl = acl
        self.credentials: tuple[str, str] | None = None
        self._decoder = FrameDecoder(server.limits.max_frame_size, server.limits.max_frame_size)
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        host, _, port = server.address.rpartition(":")
        self._transport = _MemoryTransport(peer, (host, int(port or 0)), self._received)
        self._conn = Connection(
            request_handler=server.dispatcher.handle,
            max_frame_size=server.limits.max_frame_size,
            name=f"{server.name} local {name}",
            max_header_size=server.limits.max_header_size,
            max_ext_fields=server.limits.max_ext_fields,
            before_write=server.before_write,
            after_turn=server.after_turn,
        )
        self._transport.protocol = self._conn
        self._conn.connection_made(self._transport)

    @property
    def closed(self) -> bool:
        return self._conn.closed

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Hand `request` to the broker as if it came from this client; its answer, or TimeoutError."""
        if self._conn.closed:
            raise ConnectionError(f"local channel {self.name} is closed")
        if self._acl is not None:
            if self.credentials is not None:
                sign_ext_fields(request.ext_fields, request.body_bytes(), *self.credentials)
            try:
                self._acl.check(request, self._conn.remote_address)
            except AclError as exc:
                raise refusal(exc) from None
        future: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        opaque = request.opaque
        self._pending[opaque] = future
        try:
            self._conn.data_received(encode_command_bytes(request))
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self._pending.pop(opaque, None)

    def close(self) -> None:
        self._conn.close("the client left")
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError(f"local channel {self.name} closed"))
        self._pending.clear()

    def _received(self, data: Buffer) -> None:
        for frame in self._decoder.feed(bytes(data)):
            cmd = decode_command(frame)
            if not cmd.is_response:
                if self._on_request is not None:
                    self._on_request(self.name, cmd)
                continue
            future = self._pending.get(cmd.opaque)
            if future is not None and not future.done():
                future.set_result(cmd)


class LocalChannels:
    """The local channel of each client id, at most `max_channels` (the least recently used closes)."""

    def __init__(
        self,
        server: RemotingServer,
        on_request: BrokerRequestHandler | None = None,
        max_channels: int = DEFAULT_MAX_CHANNELS,
        acl: PlainAccessValidator | None = None,
    ) -> None:
        if max_channels < 1:
            raise ValueError(f"max_channels must be at least 1, not {max_channels}")
        self._server = server
        self._on_request = on_request
        self._acl = acl
        self._max = max_channels
        self._channels: collections.OrderedDict[str, LocalChannel] = collections.OrderedDict()

    def get(self, client_id: str, peer: tuple[str, int]) -> LocalChannel:
        channel = self._channels.get(client_id)
        if channel is not None and not channel.closed:
            self._channels.move_to_end(client_id)
            return channel
        channel = LocalChannel(self._server, peer, client_id, self._on_request, self._acl)
        self._channels[client_id] = channel
        while len(self._channels) > self._max:
            _, oldest = self._channels.popitem(last=False)
            oldest.close()
        return channel

    def remove(self, client_id: str) -> None:
        channel = self._channels.pop(client_id, None)
        if channel is not None:
            channel.close()

    def close_all(self) -> None:
        while self._channels:
            _, channel = self._channels.popitem()
            channel.close()

    def __len__(self) -> int:
        return len(self._channels)
