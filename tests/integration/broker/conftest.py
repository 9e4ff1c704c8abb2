"""Shared helpers for the broker's integration tests: real `orbitmq serve` / `orbitmq broker` processes
(via orbitmq.testing) driven with raw remoting requests built from the typed headers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest

from orbitmq.client.send_request import send_header_v2
from orbitmq.message.codec import decode_records, encode_properties
from orbitmq.message.model import MessageExt
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_serve
from orbitmq.testing.process import ServerProcess
from orbitmq.testing.requests import create_topic_ext, long_names, pull_ext
from orbitmq.transport import RemotingClient

TIMEOUT = 5.0
# Short delay levels and lock expiry so retry, delay and lock tests take seconds.
FAST_CONF: dict[str, Any] = {"messageDelayLevel": "1s 2s 1s 1s", "rebalanceLockMaxLiveTime": 1500}


@pytest.fixture(scope="module")
def serve_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One `orbitmq serve` (namesrv + broker) shared by a test module."""
    workdir = tmp_path_factory.mktemp("serve")
    with start_serve(workdir, expect=("namesrv", "broker"), **FAST_CONF) as proc:
        yield proc


class Raw:
    """Raw protocol requests against one broker (and its namesrv)."""

    def __init__(self, client: RemotingClient, broker: str, namesrv: str | None = None) -> None:
        self.client = client
        self.broker = broker
        self.namesrv = namesrv

    async def call(
        self,
        code: int,
        ext: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float = TIMEOUT,
        addr: str | None = None,
    ) -> RemotingCommand:
        request = RemotingCommand.request(code, ext, body)
        return await self.client.invoke(addr or self.broker, request, timeout)

    async def create_topic(self, topic: str, queues: int = 4, perm: int = 6) -> None:
        response = await self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_ext(topic, queues, perm))
        assert response.code == ResponseCode.SUCCESS, response.remark

    async def send(
        self,
        topic: str,
        body: bytes,
        *,
        queue_id: int = 0,
        tags: str | None = None,
        keys: str | None = None,
        props: dict[str, str] | None = None,
        v1: bool = False,
        group: str = "pg",
        reconsume_times: int | None = None,
        max_reconsume_times: int | None = None,
        sys_flag: int = 0,
    ) -> RemotingCommand:
        properties = dict(props or {})
        if tags:
            properties["TAGS"] = tags
        if keys:
            properties["KEYS"] = keys
        header = send_header_v2(
            group=group,
            topic=topic,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=int(time.time() * 1000),
            flag=0,
            properties=encode_properties(properties),
            broker_name="broker-a",
            reconsume_times=reconsume_times or 0,
            max_reconsume_times=max_reconsume_times,
        )
        if v1:
            return await self.call(RequestCode.SEND_MESSAGE, long_names(header), body)
        return await self.call(RequestCode.SEND_MESSAGE_V2, header, body)

    async def pull(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        group: str = "cg",
        max_nums: int = 32,
        suspend_ms: int = 0,
        subscription: str | None = "*",
        commit_offset: int = 0,
        commit: bool = False,
        timeout: float = TIMEOUT,
    ) -> RemotingCommand:
        sys_flag = (2 if suspend_ms else 0) | (4 if subscription is not None else 0) | (1 if commit else 0)
        header = pull_ext(
            group,
            topic,
            queue_id,
            offset,
            max_nums=max_nums,
            sys_flag=sys_flag,
            suspend_ms=suspend_ms,
            subscription=subscription,
        )
        header["commitOffset"] = str(commit_offset)
        header["expressionType"] = "TAG"
        return await self.call(RequestCode.PULL_MESSAGE, header, timeout=timeout)

    async def heartbeat(
        self,
        client_id: str,
        *,
        consumer_group: str | None = None,
        producer_group: str | None = None,
        topics: tuple[str, ...] = (),
    ) -> RemotingCommand:
        consumers = []
        if consumer_group:
            subs = [
                {
                    "classFilterMode": False,
                    "codeSet": [],
                    "expressionType": "TAG",
                    "subString": "*",
                    "subVersion": 1,
                    "tagsSet": [],
                    "topic": t,
                }
                for t in topics
            ]
            consumers.append(
                {
                    "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                    "consumeType": "CONSUME_PASSIVELY",
                    "groupName": consumer_group,
                    "messageModel": "CLUSTERING",
                    "subscriptionDataSet": subs,
                    "unitMode": False,
                }
            )
        producers = [{"groupName": producer_group}] if producer_group else []
        body = orjson.dumps(
            {"clientID": client_id, "consumerDataSet": consumers, "producerDataSet": producers}
        )
        return await self.call(RequestCode.HEART_BEAT, None, body)


def messages(response: RemotingCommand) -> list[MessageExt]:
    assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
    return decode_records(response.body_bytes())


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
def raw(client: RemotingClient, serve_proc: ServerProcess) -> Raw:
    return Raw(client, serve_proc.broker_addr, serve_proc.address)
