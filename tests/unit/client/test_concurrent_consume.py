"""The concurrent consume service's worker pool: at most `concurrency` listener calls at once, batches
taken in submission order, every message consumed and its offset committed, a failing batch does not
stop the others (no broker: the service with an in-memory offset table)."""

from __future__ import annotations

import asyncio

from orbitmq.client.consume import ConcurrentConsumeService, ConsumeSettings, Listener
from orbitmq.client.offset_store import RemoteBrokerOffsetStore
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.results import ConsumeStatus, MessageModel
from orbitmq.message.model import MessageExt, MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


class _NoBackend:
    async def fetch(self, *_: object) -> int:  # never called: offsets stay in memory here
        raise AssertionError("no broker")


async def _never(*_: object) -> bool:
    raise AssertionError("nothing is sent back")


def _messages(n: int) -> list[MessageExt]:
    return [MessageExt("T", str(i).encode(), queue_offset=i) for i in range(n)]


def _service(
    listener: Listener, concurrency: int, store: RemoteBrokerOffsetStore | None = None
) -> ConcurrentConsumeService:
    offset_store = store or RemoteBrokerOffsetStore("g", _NoBackend())  # type: ignore[arg-type]
    settings = ConsumeSettings("g", listener, concurrency, 1, MessageModel.CLUSTERING, offset_store)
    return ConcurrentConsumeService(settings, send_back=_never)


def test_at_most_concurrency_calls_in_submission_order_and_every_offset_committed() -> None:
    async def run() -> None:
        running = 0
        peak = 0
        started: list[int] = []

        async def listener(msgs: list[MessageExt], _context: object) -> ConsumeStatus:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            started.append(msgs[0].queue_offset)
            await asyncio.sleep(0.001)
            running -= 1
            return ConsumeStatus.CONSUME_SUCCESS

        store = RemoteBrokerOffsetStore("g", _NoBackend())  # type: ignore[arg-type]
        service = _service(listener, 4, store)
        pq = ProcessQueue()
        msgs = _messages(50)
        pq.put_messages(msgs)
        service.submit(msgs[:30], pq, MQ)
        service.submit(msgs[30:], pq, MQ)
        assert len(service.tasks) == 4  # workers, not a task per message
        await service.shutdown(wait=True)
        assert peak == 4
        assert started == list(range(50))
        assert service.consumed == 50
        assert store.table[MQ] == 50  # past the last consumed offset

    asyncio.run(run())


def test_a_batch_that_fails_outside_the_listener_does_not_stop_the_worker() -> None:
    async def run() -> None:
        seen: list[int] = []

        async def listener(msgs: list[MessageExt], _context: object) -> ConsumeStatus:
            seen.append(msgs[0].queue_offset)
            return ConsumeStatus.CONSUME_SUCCESS

        class _Flaky(RemoteBrokerOffsetStore):
            def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool = False) -> None:
                if offset == 2:
                    raise RuntimeError("offset table bug")
                super().update_offset(mq, offset, increase_only=increase_only)

        service = _service(listener, 1, _Flaky("g", _NoBackend()))  # type: ignore[arg-type]
        pq = ProcessQueue()
        msgs = _messages(5)
        pq.put_messages(msgs)
        service.submit(msgs, pq, MQ)
        await service.shutdown(wait=True)
        assert seen == [0, 1, 2, 3, 4]

    asyncio.run(run())


def test_a_batch_submitted_as_the_last_worker_leaves_still_gets_a_worker() -> None:
    # The listener schedules the next submit: it runs after the worker finished but before the finished
    # task's done callback took it out of `tasks` (a worker count taken from `tasks` saw no free slot).
    async def run() -> None:
        seen: list[int] = []
        service: ConcurrentConsumeService
        pq = ProcessQueue()
        msgs = _messages(3)
        pq.put_messages(msgs)

        async def listener(batch: list[MessageExt], _context: object) -> ConsumeStatus:
            offset = batch[0].queue_offset
            seen.append(offset)
            if offset + 1 < len(msgs):
                asyncio.get_running_loop().call_soon(service.submit, [msgs[offset + 1]], pq, MQ)
            return ConsumeStatus.CONSUME_SUCCESS

        service = _service(listener, 1)
        service.submit([msgs[0]], pq, MQ)
        for _ in range(50):
            await asyncio.sleep(0)
        assert seen == [0, 1, 2]
        await service.shutdown(wait=True)

    asyncio.run(run())
