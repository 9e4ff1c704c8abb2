"""Broker behaviour at the edges of the store, against real `orbitmq serve` processes:

- retention in a running broker (fileReservedTime=0, every hour a deletion hour, a 200 ms check interval,
  64 KiB commit-log segments, 40-entry consume-queue files): old segments and the consume-queue files
  they orphan are deleted, GET_MIN_OFFSET moves up, a pull below it answers PULL_OFFSET_MOVED with
  nextBeginOffset = the new min offset;
- OFFSET_MOVED_EVENT: every PULL_OFFSET_MOVED on the master stores an OffsetMovedEvent (JSON body, tags
  and keys = the consumer group) in topic OFFSET_MOVED_EVENT;
- FLUSH_DISK_TIMEOUT: a SYNC_FLUSH broker with syncFlushTimeout=0 cannot flush within the timeout, so a
  send waiting for the flush is answered code 10 and the Python producer reports
  SendStatus.FLUSH_DISK_TIMEOUT; the message is stored all the same.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from orbitmq.client.aio import Message, Producer, SendStatus
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.testing import start_serve
from orbitmq.transport import RemotingClient

from .conftest import Raw, messages

SEGMENT = 65536
CQ_ENTRIES_PER_FILE = 40
EVERY_HOUR = ";".join(f"{h:02d}" for h in range(24))


async def min_offset(raw: Raw, topic: str, queue_id: int) -> int:
    response = await raw.call(RequestCode.GET_MIN_OFFSET, {"topic": topic, "queueId": str(queue_id)})
    assert response.code == ResponseCode.SUCCESS, response.remark
    return int(response.ext_fields["offset"])


async def offset_moved_events(raw: Raw, group: str) -> list[dict[str, object]]:
    response = await raw.pull("OFFSET_MOVED_EVENT", 0, 0, group="event-reader", max_nums=64)
    if response.code != ResponseCode.SUCCESS:
        return []
    found = []
    for m in messages(response):
        if m.tags == group:
            assert m.keys == group
            found.append(orjson.loads(m.body))
    return found


async def test_retention_deletes_old_files_and_moves_the_min_offset(tmp_path: Path) -> None:
    topic = "RetentionTopic"
    group = "retention-group"
    with start_serve(
        tmp_path,
        mappedFileSizeCommitLog=SEGMENT,
        mappedFileSizeConsumeQueue=20 * CQ_ENTRIES_PER_FILE,
        fileReservedTime=0,
        deleteWhen=EVERY_HOUR,
        retentionCheckInterval=200,
    ) as serve:
        client = RemotingClient()
        try:
            raw = Raw(client, serve.broker_addr)
            await raw.create_topic(topic, queues=1)
            body = b"r" * 1000
            count = 200  # ~1.1 KB records: about four 64 KiB segments, five consume-queue files
            for i in range(count):
                response = await raw.send(topic, body + str(i).encode(), queue_id=0)
                assert response.code == ResponseCode.SUCCESS, response.remark

            commit_log_dir = tmp_path / "store" / "commitlog"
            cq_dir = tmp_path / "store" / "consumequeue" / topic / "0"
            # With fileReservedTime=0 every segment but the newest expires (a pre-allocated next segment
            # may exist too); wait until retention is done (nothing changing across two retention rounds)
            # so the min offset holds still.
            deadline = asyncio.get_running_loop().time() + 15
            previous = None
            while True:
                low = await min_offset(raw, topic, 0)
                segments = sorted(p.name for p in commit_log_dir.iterdir())
                cq_files = sorted(p.name for p in cq_dir.iterdir())
                state = (low, segments, cq_files)
                if low > 0 and state == previous:
                    break
                previous = state
                assert asyncio.get_running_loop().time() < deadline, state
                await asyncio.sleep(0.3)

            # Only whole segments went, never the newest; the consume queue lost whole files only.
            assert all(int(name) % SEGMENT == 0 for name in segments)
            assert int(segments[0]) >= 3 * SEGMENT and len(segments) <= 2
            first_cq = int(cq_files[0])
            assert first_cq % (20 * CQ_ENTRIES_PER_FILE) == 0 and first_cq > 0
            assert 0 < low < count
            assert low >= first_cq // 20  # the min offset lies in the oldest remaining consume-queue file

            response = await raw.pull(topic, 0, 0, group=group)
            assert response.code == ResponseCode.PULL_OFFSET_MOVED, response.remark
            assert int(response.ext_fields["nextBeginOffset"]) == low
            assert int(response.ext_fields["minOffset"]) == low

            # From the corrected offset the queue reads on, starting exactly at the min offset.
            found = messages(await raw.pull(topic, 0, low, group=group))
            assert found[0].queue_offset == low
            assert found[0].body == body + str(low).encode()

            events = await offset_moved_events(raw, group)
            assert {
                "consumerGroup": group,
                "messageQueue": {"brokerName": "broker-a", "queueId": 0, "topic": topic},
                "offsetNew": low,
                "offsetRequest": 0,
            } in events
        finally:
            await client.close()


async def test_offset_moved_event_on_an_offset_beyond_the_max(tmp_path: Path) -> None:
    topic = "MovedTopic"
    group = "moved-group"
    with start_serve(tmp_path, mappedFileSizeCommitLog=SEGMENT * 16) as serve:
        client = RemotingClient()
        try:
            raw = Raw(client, serve.broker_addr)
            await raw.create_topic(topic, queues=2)
            for i in range(3):
                assert (await raw.send(topic, f"m{i}".encode(), queue_id=1)).code == ResponseCode.SUCCESS
            assert await offset_moved_events(raw, group) == []

            response = await raw.pull(topic, 1, 1000, group=group)
            assert response.code == ResponseCode.PULL_OFFSET_MOVED
            assert int(response.ext_fields["nextBeginOffset"]) == 3
            # An offset that is merely not there yet is no move: no event for it.
            assert (await raw.pull(topic, 1, 3, group=group)).code == ResponseCode.PULL_NOT_FOUND

            events = await offset_moved_events(raw, group)
            assert events == [
                {
                    "consumerGroup": group,
                    "messageQueue": {"brokerName": "broker-a", "queueId": 1, "topic": topic},
                    "offsetNew": 3,
                    "offsetRequest": 1000,
                }
            ]
        finally:
            await client.close()


async def test_sync_flush_timeout_answers_flush_disk_timeout(tmp_path: Path) -> None:
    topic = "FlushTopic"
    with start_serve(
        tmp_path, flushDiskType="SYNC_FLUSH", syncFlushTimeout=0, mappedFileSizeCommitLog=SEGMENT * 16
    ) as serve:
        client = RemotingClient()
        try:
            raw = Raw(client, serve.broker_addr)
            await raw.create_topic(topic, queues=1)
            # A flush cannot finish in 0 ms, but a flusher round that happens to cover a message between its
            # append and its flush request answers SUCCESS (a race): so each answer is one of the two, and
            # sends go on until FLUSH_DISK_TIMEOUT has been seen (at most 50; the race is rare).
            codes: list[int] = []
            while ResponseCode.FLUSH_DISK_TIMEOUT not in codes:
                assert len(codes) < 50, codes
                codes.append((await raw.send(topic, b"raw", props={"WAIT": "true"})).code)
            assert set(codes) <= {ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.SUCCESS}
            # WAIT=false: the broker does not wait for the flush at all.
            assert (await raw.send(topic, b"nowait", props={"WAIT": "false"})).code == ResponseCode.SUCCESS

            async with Producer("flush-producer", [serve.address]) as producer:
                statuses: list[SendStatus] = []
                while SendStatus.FLUSH_DISK_TIMEOUT not in statuses:
                    assert len(statuses) < 50, statuses
                    statuses.append((await producer.send(Message.create(topic, "py"))).status)
                batch = await producer.send_batch([Message.create(topic, f"b{i}") for i in range(50)])
            assert set(statuses) <= {SendStatus.FLUSH_DISK_TIMEOUT, SendStatus.SEND_OK}
            assert batch.status in (SendStatus.FLUSH_DISK_TIMEOUT, SendStatus.SEND_OK)

            # FLUSH_DISK_TIMEOUT is not a failure to store: everything is readable.
            n = len(codes)
            found = messages(await raw.pull(topic, 0, 0, max_nums=n + 1))
            assert [m.body for m in found] == [b"raw"] * n + [b"nowait"]
            max_offset = await raw.call(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
            assert int(max_offset.ext_fields["offset"]) == n + 1 + len(statuses) + 50
        finally:
            await client.close()
