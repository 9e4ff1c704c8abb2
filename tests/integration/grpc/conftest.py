"""`orbitmq serve --grpc-port 0` for the tests of the gRPC endpoint, driven by the official RocketMQ 5.x
Python client (rocketmq-python-client 5.1.2, module `rocketmq`) and by its generated stub for raw calls."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("rocketmq", reason="needs the dev extra's rocketmq-python-client")

import grpc
from rocketmq.grpc_protocol import MessagingServiceStub

from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.testing import ServerProcess, start_serve

GRPC_LINE = re.compile(r"^grpc listening on (\S+:\d+)\s*$")
SHORT_DELAY_LEVELS = " ".join(f"{i}s" for i in range(1, 19))
MAX_MESSAGE_SIZE = 65536
_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}{uuid.uuid4().hex[:6]}"


@dataclass
class GrpcServe:
    proc: ServerProcess
    grpc_address: str
    admin: tuple[str, str] | None = None  # the account that creates topics when aclEnable=true
    tls: bool = False  # the broker port takes TLS only

    @property
    def namesrv(self) -> str:
        return self.proc.namesrv_addr

    @property
    def grpc_port(self) -> int:
        return int(self.grpc_address.rsplit(":", 1)[1])

    def create_topic(self, topic: str, queues: int = 4) -> None:
        asyncio.run(self.create_topic_async(topic, queues))

    async def create_topic_async(self, topic: str, queues: int = 4) -> None:
        access_key, secret_key = self.admin or (None, None)
        config = ClientConfig(
            namesrv_addrs=[self.namesrv], access_key=access_key, secret_key=secret_key, tls=self.tls
        )
        instance = ClientInstance(config)
        try:
            await instance.api.create_topic(
                self.proc.broker_addr, topic, read_queue_nums=queues, write_queue_nums=queues
            )
        finally:
            await instance.shutdown()


def grpc_address(proc: ServerProcess, timeout: float = 15.0) -> str:
    """The address of serve's `grpc listening on HOST:PORT` line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = proc.stdout_path.read_text(encoding="utf-8", errors="replace").splitlines()
        # (a restarted process appends to the same file: only the lines after its own first one count)
        starts = [i for i, line in enumerate(lines) if line.startswith(("namesrv listening", "broker "))]
        for line in lines[starts[-1] if starts else 0 :]:
            match = GRPC_LINE.match(line.strip())
            if match:
                return match.group(1)
        time.sleep(0.05)
    raise AssertionError(f"serve printed no grpc line within {timeout}s\n{proc.log_tail()}")


@contextlib.contextmanager
def grpc_serve(workdir: Path, **conf: object) -> Iterator[GrpcServe]:
    """`orbitmq serve --grpc-port 0` with short delay levels, small store files and `conf`."""
    props: dict[str, object] = {
        "messageDelayLevel": SHORT_DELAY_LEVELS,
        "maxMessageSize": MAX_MESSAGE_SIZE,
        "mappedFileSizeCommitLog": 16 * 1024 * 1024,
        "mappedFileSizeConsumeQueue": 20 * 6000,
        **conf,
    }
    with start_serve(workdir, extra_args=("--grpc-port", "0"), **props) as proc:
        yield GrpcServe(proc, grpc_address(proc))


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[GrpcServe]:
    with grpc_serve(tmp_path) as running:
        yield running


def metadata(client_id: str | None = None) -> list[tuple[str, str]]:
    """The headers a 5.x client sends (without a signature: no ACL here)."""
    headers = [
        ("x-mq-language", "PYTHON"),
        ("x-mq-protocol", "GRPC_V2"),
        ("x-mq-client-version", "5.1.2"),
        ("x-mq-request-id", str(uuid.uuid4())),
    ]
    if client_id is not None:
        headers.append(("x-mq-client-id", client_id))
    return headers


@pytest.fixture
def stub(serve: GrpcServe) -> Iterator[MessagingServiceStub]:
    """The official client's generated stub on a plain channel, for calls the client would not make."""
    with grpc.insecure_channel(serve.grpc_address) as channel:
        yield MessagingServiceStub(channel)
