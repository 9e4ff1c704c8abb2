"""Faults of a real machine made for real processes: a slow disk (FUSE, orbitmq.testing.slowfs) and
an hour of client churn (orbitmq.testing.churn). Everything here is bounded in time and stops what it
started; a test skips, with the reason, only where FUSE is missing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.message.codec import encode_properties
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.headers import (
    CreateTopicRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
)
from orbitmq.testing.slowfs import SlowDisk, unavailable_reason
from orbitmq.transport import RemotingClient

TIMEOUT = 10.0


@pytest.fixture
def slow_disk(tmp_path: Path) -> Iterator[SlowDisk]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"slow-disk file system unavailable: {reason}")
    with SlowDisk(tmp_path / "disk") as disk:
        yield disk


class Raw:
    """Raw requests to one address over this object's own connection (one RemotingClient each)."""

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.client = RemotingClient()

    async def call(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
        return await self.client.invoke(self.addr, RemotingCommand.request(code, ext, body), TIMEOUT)

    async def create_topic(self, topic: str, queues: int = 1) -> RemotingCommand:
        header = CreateTopicRequestHeader(
            topic=topic, read_queue_nums=queues, write_queue_nums=queues, perm=6
        )
        return await self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext())

    async def send(self, topic: str, body: bytes, queue_id: int = 0) -> RemotingCommand:
        header = SendMessageRequestHeader(
            producer_group="faults-pg",
            topic=topic,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            properties=encode_properties({}),
        )
        return await self.call(RequestCode.SEND_MESSAGE_V2, header.to_ext_v2(), body)

    async def pull(self, topic: str, offset: int, queue_id: int = 0) -> RemotingCommand:
        header = PullMessageRequestHeader(
            consumer_group="faults-cg",
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=8,
            sys_flag=4,  # the request carries its subscription
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription="*",
            sub_version=0,
            expression_type="TAG",
        )
        return await self.call(RequestCode.PULL_MESSAGE, header.to_ext())

    async def route(self, topic: str) -> RemotingCommand:
        return await self.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})

    async def close(self) -> None:
        await self.client.close()
