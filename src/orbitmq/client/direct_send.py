"""The blocking producer's first attempt, sent and awaited on the caller's own thread (and its oneway
sends, written there).

The blocking facade runs the asyncio client on one background loop thread. A send handed to that
thread and its answer handed back cost two thread wake-ups (and the GIL passed back and forth) per
message: on a VM whose idle vCPUs halt, that doubled a send's round trip. So when everything a send
needs is at hand (the topic's route and master address, no latency fault tolerance, no TLS), the
blocking `Producer.send` makes its first attempt here: the same queue selection, prepared message and
header as the asyncio path, written to a blocking socket of the calling thread (one per broker address)
and answered on it; `send_oneway` writes there and returns. Anything else is sent on the loop
(`Producer._send_started`), and a failed attempt is retried there (`Producer._resume_send`, with the
attempts that remain), as the asyncio client's own first attempts are; a oneway write that failed is
sent again on the loop (the broker drops a frame cut short).

Sockets belong to the thread that opened them (a thread-local table). They are closed by `close()` (the
producer's shutdown), when one fails, and, for threads that ended, whenever another thread opens one (so
short-lived sending threads leave at most one socket per live thread and broker). One that sat idle
longer than the broker lets a connection sit (`IDLE_REOPEN`) is reopened before it is used: the broker
may have closed it.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import TYPE_CHECKING, Final, NamedTuple

from orbitmq.client.results import SendResult
from orbitmq.client.send_call import ATTEMPT_FAILURES
from orbitmq.client.send_request import Prepared, send_code
from orbitmq.client.send_result import send_result
from orbitmq.common.errors import ConnectError, RemoteProtocolError, RequestTimeoutError
from orbitmq.message import properties as P
from orbitmq.message.model import MessageQueue
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.transport.connection import split_address

if TYPE_CHECKING:
    from orbitmq.client.producer import Producer
    from orbitmq.message.model import Message

# Brokers close a connection idle for 120 s (RocketMQ's channel idle time): reopen well before that.
IDLE_REOPEN: Final = 60.0
_LENGTH: Final = struct.Struct(">i")


class Attempt(NamedTuple):
    """A first attempt made on the caller's thread: its queue and prepared message (a retry on the loop
    sends the same bytes), and its result or the error it failed with."""

    mq: MessageQueue
    prepared: Prepared
    result: SendResult | None
    error: Exception | None


class _Line:
    """One thread's blocking connection to one broker."""

    __slots__ = ("last_used", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.last_used = time.monotonic()


class DirectSender:
    def __init__(self, producer: Producer) -> None:
        self._producer = producer
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: dict[socket.socket, threading.Thread] = {}  # every open socket and its thread
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._open = self._open, {}
        for sock in sockets:
            sock.close()

    def attempt(self, msg: Message, budget: float) -> Attempt | None:
        """The first attempt, on this thread. None when it cannot be made here (nothing was sent: the
        caller sends on the loop); else where it went and its result or the error it failed with."""
        built = self._build(msg, oneway=False)
        if built is None:
            return None
        mq, addr, prepared, request = built
        instance = self._producer.instance
        assert instance is not None  # (_build returns None without one)
        max_frame = instance.api.remoting.max_frame_size  # the same frame limit as on the loop
        try:
            line = self._line(addr, budget)
            try:
                response = self._exchange(line.sock, request, budget, max_frame)
            except BaseException:
                self._drop(addr, line)
                raise
            line.last_used = time.monotonic()
            msg_id = msg.properties[P.UNIQ_KEY]
            result = send_result(response, addr, mq.broker_name, mq.topic, msg_id, sent_to=mq)
        except ATTEMPT_FAILURES as exc:
            return Attempt(mq, prepared, None, exc)
        return Attempt(mq, prepared, result, None)

    def oneway(self, msg: Message) -> bool:
        """Fire and forget on this thread: True once written; False when it cannot be sent here or the
        write failed (the caller sends on the loop then: a frame cut short is dropped by the broker)."""
        built = self._build(msg, oneway=True)
        if built is None:
            return False
        _, addr, _, request = built
        timeout = self._producer.send_timeout
        try:
            line = self._line(addr, timeout)
        except ConnectError:
            return False
        try:
            line.sock.settimeout(timeout)
            line.sock.sendall(encode_command_bytes(request))
        except OSError:
            self._drop(addr, line)
            return False
        line.last_used = time.monotonic()
        return True

    # ---- internals --------------------------------------------------------------------------

    def _build(
        self, msg: Message, *, oneway: bool
    ) -> tuple[MessageQueue, str, Prepared, RemotingCommand] | None:
        """The queue, address, prepared message and signed request of a send made on this thread; None
        when it cannot be made here."""
        producer = self._producer
        instance = producer.instance
        if self._closed or instance is None or producer.fault.enabled:
            return None
        remoting = instance.api.remoting
        if remoting.ssl is not None:
            return None
        producer._validate(msg)
        target = producer._cached_target(msg.topic)
        if target is None:
            return None
        _, mq, addr = target
        prepared = producer._prepare(msg)
        header = producer._header(mq, msg.topic, prepared, msg.flag)
        request = RemotingCommand.request(send_code(header, False), header, prepared.body, oneway=oneway)
        if remoting.rpc_hook is not None:
            remoting.rpc_hook(request)
        return mq, addr, prepared, request

    def _line(self, addr: str, timeout: float) -> _Line:
        lines: dict[str, _Line] | None = getattr(self._local, "lines", None)
        if lines is None:
            lines = self._local.lines = {}
        line = lines.get(addr)
        if line is not None and time.monotonic() - line.last_used < IDLE_REOPEN:
            return line
        if line is not None:
            self._drop(addr, line)
        host, port = split_address(addr)
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise ConnectError(f"connect to {addr} failed: {exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            if self._closed:
                sock.close()
                raise ConnectError("the producer is shut down")
            for other, thread in list(self._open.items()):
                if not thread.is_alive():  # its thread ended: nobody will use or close it
                    del self._open[other]
                    other.close()
            self._open[sock] = threading.current_thread()
        line = lines[addr] = _Line(sock)
        return line

    def _drop(self, addr: str, line: _Line) -> None:
        lines: dict[str, _Line] = self._local.lines
        if lines.get(addr) is line:
            del lines[addr]
        with self._lock:
            self._open.pop(line.sock, None)
        line.sock.close()

    @staticmethod
    def _exchange(
        sock: socket.socket, request: RemotingCommand, timeout: float, max_frame: int
    ) -> RemotingCommand:
        """`request` written, its answer read (no longer than the client's frame limit, as on the loop)."""
        sock.settimeout(timeout)
        try:
            sock.sendall(encode_command_bytes(request))
            head = _read(sock, 4)
            (length,) = _LENGTH.unpack(head)
            if not 0 < length <= max_frame:
                raise RemoteProtocolError(f"bad frame length {length}")
            response = decode_command(_read(sock, length))
        except TimeoutError:
            raise RequestTimeoutError(f"no answer to a send within {timeout:.3f} s") from None
        except OSError as exc:
            raise ConnectError(f"send failed: {exc}") from None
        if response.opaque != request.opaque or not response.is_response:
            raise RemoteProtocolError("the answer does not match the send")
        return response


def _read(sock: socket.socket, count: int) -> bytes:
    data = sock.recv(count)
    if len(data) == count:
        return data
    parts = [data]
    got = len(data)
    while got < count:
        if not data:
            raise ConnectError("the broker closed the connection")
        data = sock.recv(count - got)
        parts.append(data)
        got += len(data)
    return b"".join(parts)
