"""The blocking Producer's first attempt (and oneway write) on the caller's own thread: handing a send
to the loop thread and back costs two thread wake-ups per message. The same `SendPath` choice, message
and header as on the loop, on a blocking socket per thread and broker; anything else, and every retry,
goes to the loop. The socket is polled briefly for the answer before blocking (`busy_poll_us`,
transport/busy_poll.py). Sockets of ended threads, of addresses no route names, and those idle longer
than `direct_socket_max_idle` are closed when a thread opens one; all at shutdown.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import Any, Final

from orbitmq.client.send_path import ATTEMPT_FAILURES, Attempt, SendPath, chosen_queue
from orbitmq.client.send_request import MessageQueueSelector, Outgoing, send_code
from orbitmq.client.send_result import send_result
from orbitmq.common.errors import ConnectError, RemoteProtocolError, RequestTimeoutError
from orbitmq.message import properties as P
from orbitmq.message.model import Message, MessageQueue
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.protocol.frames import FrameDecoder
from orbitmq.transport.busy_poll import GROW_START, CpuWatch, next_window
from orbitmq.transport.connection import split_address

_LENGTH: Final = struct.Struct(">i")
_HEAD: Final = 8  # a frame's length and header-length words: every frame has both
# Seconds a socket may rest before it is looked at (one peek) ahead of its next use.
_LOOK_AFTER_IDLE: Final = 1.0
_PERF_COUNTER: Final = time.perf_counter


class _Line:
    """One thread's blocking connection to one broker. `busy` and `closed` change under the sender's
    lock: a sweep closes a line only while its thread is not using it."""

    __slots__ = ("addr", "busy", "closed", "cpu", "last_used", "limit", "sock", "thread", "window")

    def __init__(self, sock: socket.socket, addr: str, limit: float) -> None:
        self.sock = sock
        self.addr = addr
        self.thread = threading.current_thread()
        self.last_used = time.monotonic()
        self.busy = False
        self.closed = False
        # Polling for answers (seconds; see the module docstring): at most `limit`, `window` adapting.
        self.limit = limit
        self.window = min(GROW_START, limit)
        self.cpu = CpuWatch()  # (read by the line's own thread only)


class DirectSender:
    """One blocking producer's sockets and the sends made on them."""

    def __init__(self, path: SendPath) -> None:
        self._path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: dict[socket.socket, _Line] = {}  # every open socket
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            lines, self._open = list(self._open.values()), {}
            for line in lines:
                line.closed = True
        for line in lines:
            line.sock.close()

    def choose(self, msg: Message, selector: MessageQueueSelector, arg: Any) -> MessageQueue | None:
        """`selector`'s queue, chosen on this thread from the cached route; None when the route is not
        at hand or the send cannot be made here anyway (nothing was called: the loop chooses then)."""
        if not self._usable():
            return None
        path = self._path
        info = path.publish_info.get(msg.topic)
        if info is None or not info.ok:
            return None
        path.validate(msg)
        return chosen_queue(info, msg, selector, arg)

    def attempt(self, msg: Message, budget: float, queue: MessageQueue | None = None) -> Attempt | None:
        """The first attempt, on this thread (to `queue` when given, else the next queue of the round
        robin). None when it cannot be made here (nothing was sent: the caller sends on the loop); else
        where it went and its result or the error it failed with."""
        single = self._single(msg, queue)
        if single is None:
            return None
        out, mq, addr = single
        return self._attempt(out, mq, addr, budget)

    def attempt_batch(
        self, out: Outgoing, budget: float, queue: MessageQueue | None = None
    ) -> Attempt | None:
        """`attempt` for a batch (`Producer.batch`)."""
        target = self._target(out.topic, queue) if self._usable() else None
        if target is None:
            return None
        mq, addr = target
        return self._attempt(out, mq, addr, budget)

    def oneway(self, msg: Message) -> bool:
        """Fire and forget on this thread: True once written; False when it cannot be sent here or the
        write failed (the caller sends on the loop then: a frame cut short is dropped by the broker)."""
        single = self._single(msg, None)
        if single is None:
            return False
        out, mq, addr = single
        request = self._request(out, mq, oneway=True)
        timeout = self._path.send_timeout
        try:
            line = self._take(addr, timeout)
        except ConnectError:
            return False
        try:
            line.sock.settimeout(timeout)
            line.sock.sendall(encode_command_bytes(request))
        except OSError:
            self._drop(line)
            return False
        self._release(line)
        return True

    # ---- internals --------------------------------------------------------------------------

    def _usable(self) -> bool:
        """Whether sends can be made here at all (a started producer without latency fault tolerance,
        whose client does not use TLS)."""
        path = self._path
        instance = path.instance
        if self._closed or instance is None or not path.started or path.fault.enabled:
            return False
        return instance.api.remoting.ssl is None

    def _single(self, msg: Message, queue: MessageQueue | None) -> tuple[Outgoing, MessageQueue, str] | None:
        """`msg` validated and prepared, with its queue and that queue's master address; None (nothing
        prepared) when it cannot be sent from here."""
        if not self._usable():
            return None
        path = self._path
        path.validate(msg)
        target = self._target(msg.topic, queue)
        if target is None:
            return None
        mq, addr = target
        prepared = path.prepare(msg)  # (gives the message its UNIQ_KEY)
        return Outgoing(msg.topic, msg.properties[P.UNIQ_KEY], prepared, msg.flag, False), mq, addr

    def _target(self, topic: str, queue: MessageQueue | None) -> tuple[MessageQueue, str] | None:
        """`queue` (or the round robin's next queue of `topic`) and its master's cached address; None
        when either is not at hand."""
        path = self._path
        if queue is None:
            target = path.cached_target(topic)
            return None if target is None else (target[1], target[2])
        instance = path.instance
        addr = instance.master_address(queue.broker_name) if instance is not None else None
        return None if addr is None else (queue, addr)

    def _request(self, out: Outgoing, mq: MessageQueue, *, oneway: bool) -> RemotingCommand:
        """The signed request carrying `out` to `mq`."""
        path = self._path
        header = path.header(mq, out.topic, out.prepared, out.flag, out.batch)
        request = RemotingCommand.request(
            send_code(header, out.batch), header, out.prepared.body, oneway=oneway
        )
        instance = path.instance
        assert instance is not None  # (checked by _usable)
        hook = instance.api.remoting.rpc_hook
        if hook is not None:
            hook(request)
        return request

    def _attempt(self, out: Outgoing, mq: MessageQueue, addr: str, budget: float) -> Attempt:
        request = self._request(out, mq, oneway=False)
        instance = self._path.instance
        assert instance is not None
        max_frame = instance.api.remoting.max_frame_size  # the same frame limit as on the loop
        try:
            line = self._take(addr, budget)
            try:
                response = self._exchange(line, request, budget, max_frame)
            except BaseException:
                self._drop(line)
                raise
            self._release(line)
            result = send_result(response, addr, mq.broker_name, mq.topic, out.msg_id, sent_to=mq)
        except ATTEMPT_FAILURES as exc:
            return Attempt(mq, out, None, exc)
        return Attempt(mq, out, result, None)

    def _take(self, addr: str, timeout: float) -> _Line:
        """This thread's line to `addr`, marked busy (a sweep leaves it alone until `_release`)."""
        instance = self._path.instance
        max_idle = instance.config.direct_socket_max_idle if instance is not None else 0.0
        lines: dict[str, _Line] | None = getattr(self._local, "lines", None)
        if lines is None:
            lines = self._local.lines = {}
        line = lines.get(addr)
        if line is not None:
            idle = time.monotonic() - line.last_used
            # A socket that rested may have been closed by the broker (restarted, or idle-closed): look
            # before writing, so that a send the broker never saw is not failed (or, to a chosen queue,
            # raised) for it. A busy sender does not pay for the look.
            usable = idle < max_idle and (idle < _LOOK_AFTER_IDLE or _open_at_peer(line.sock))
            with self._lock:
                if usable and not line.closed:
                    line.busy = True
                    return line
            self._drop(line)  # idle too long, closed by the broker, or swept
        host, port = split_address(addr)
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise ConnectError(f"connect to {addr} failed: {exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        limit = instance.config.busy_poll_us / 1e6 if instance is not None else 0.0
        line = _Line(sock, addr, limit)
        line.busy = True
        swept = self._sweep(max_idle)
        with self._lock:
            if self._closed:
                sock.close()
                raise ConnectError("the producer is shut down")
            self._open[sock] = line
        for other in swept:
            other.sock.close()
        lines[addr] = line
        return line

    def _sweep(self, max_idle: float) -> list[_Line]:
        """Take out the lines nobody will use again (their thread ended, their address left every
        route) and those idle longer than `max_idle` (their thread would open another); return them
        to be closed."""
        instance = self._path.instance
        # (list() of a dict is one C call: no other thread changes it meanwhile)
        routed = (
            {a for addrs in list(instance.broker_addrs.values()) for a in list(addrs.values())}
            if instance
            else set()
        )
        stale_before = time.monotonic() - max_idle
        swept: list[_Line] = []
        with self._lock:
            for sock, line in list(self._open.items()):
                if line.busy:
                    continue
                if not line.thread.is_alive() or line.addr not in routed or line.last_used < stale_before:
                    line.closed = True
                    del self._open[sock]
                    swept.append(line)
        return swept

    def _release(self, line: _Line) -> None:
        line.last_used = time.monotonic()
        line.busy = False  # (a plain store: a sweep that reads the old value just skips the line)

    def _drop(self, line: _Line) -> None:
        lines: dict[str, _Line] = self._local.lines
        if lines.get(line.addr) is line:
            del lines[line.addr]
        with self._lock:
            line.closed = True
            line.busy = False
            self._open.pop(line.sock, None)
        line.sock.close()

    @staticmethod
    def _exchange(line: _Line, request: RemotingCommand, timeout: float, max_frame: int) -> RemotingCommand:
        """`request` written, its answer read: exactly one frame, checked by the frame decoder the loop's
        connections use, with the same limits (a bad length is refused before its bytes are read)."""
        sock = line.sock
        sock.settimeout(timeout)
        try:
            sock.sendall(encode_command_bytes(request))
            decoder = FrameDecoder(max_frame, max_frame)
            head = _polled_head(line) if line.limit > 0.0 else _read(sock, _HEAD)
            frames = decoder.feed(head)
            if not frames:
                (length,) = _LENGTH.unpack_from(head)
                frames = decoder.feed(_read(sock, length + 4 - _HEAD))
            response = decode_command(frames[0])
        except TimeoutError:
            raise RequestTimeoutError(f"no answer to a send within {timeout:.3f} s") from None
        except OSError as exc:
            raise ConnectError(f"send failed: {exc}") from None
        if response.opaque != request.opaque or not response.is_response:
            raise RemoteProtocolError("the answer does not match the send")
        return response


def _open_at_peer(sock: socket.socket) -> bool:
    """False when the broker closed `sock` (or anything is waiting on it: answers come only to sends,
    so unread bytes mean a broken exchange); one non-blocking peek."""
    try:
        sock.setblocking(False)
        try:
            sock.recv(1, socket.MSG_PEEK)  # b"" (closed) or stray bytes: either way not usable
        finally:
            sock.setblocking(True)
        return False
    except BlockingIOError:
        return True  # nothing to read: open
    except OSError:
        return False


def _polled_head(line: _Line) -> bytes:
    """The answer's first `_HEAD` bytes, polled for during the line's window before blocking; the window
    adapts to when they came (transport/busy_poll.py)."""
    sock = line.sock
    started = _PERF_COUNTER()
    window = line.window
    if window > 0.0 and not line.cpu.check(started):
        # A socket with a timeout is non-blocking at the OS level (Python waits in poll() before each
        # recv): a plain read of its descriptor returns at once, with data or EAGAIN.
        fd = sock.fileno()
        deadline = started + window
        while True:
            try:
                data = os.read(fd, _HEAD)
            except BlockingIOError:
                if _PERF_COUNTER() < deadline:
                    continue
                break
            if not data:
                raise ConnectError("the broker closed the connection")
            # caught while polling: the window stays
            return data if len(data) == _HEAD else data + _read(sock, _HEAD - len(data))
    head = _read(sock, _HEAD)
    line.window = next_window(window, _PERF_COUNTER() - started, line.limit)
    return head


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
