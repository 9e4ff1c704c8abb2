"""Broker smoke benchmark (a script, not a test): send TPS/RT for 1 KiB messages with 1 and 4 concurrent
senders, then the catch-up consume rate (pulling everything back from offset 0), using raw remoting
requests against a fresh `orbitmq serve` (or --broker ADDR for a running broker).

    orbitmq bench broker-smoke [--seconds 5] [--size 1024] [--flush ASYNC_FLUSH|SYNC_FLUSH]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_serve
from orbitmq.testing.requests import create_topic_ext, pull_ext, send_ext
from orbitmq.transport import RemotingClient

TOPIC = "BenchSmoke"


async def sender(
    client: RemotingClient, addr: str, body: bytes, queue_id: int, *, until: float, rts: list[float]
) -> None:
    ext = send_ext(TOPIC, group="bench", queue_id=queue_id)
    while time.perf_counter() < until:
        start = time.perf_counter()
        response = await client.invoke(
            addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body), 5
        )
        rts.append(time.perf_counter() - start)
        if response.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"send failed: {response.code} {response.remark}")


async def send_phase(
    addr: str, concurrency: int, seconds: float, size: int
) -> tuple[int, float, list[float]]:
    clients = [RemotingClient() for _ in range(concurrency)]
    rts: list[float] = []
    body = b"x" * size
    try:
        started = time.perf_counter()
        until = started + seconds
        await asyncio.gather(
            *(sender(c, addr, body, i % 4, until=until, rts=rts) for i, c in enumerate(clients))
        )
        elapsed = time.perf_counter() - started
    finally:
        for c in clients:
            await c.close()
    return len(rts), elapsed, rts


async def consume_all(addr: str) -> tuple[int, int, float]:
    client = RemotingClient()
    total = total_bytes = 0
    started = time.perf_counter()
    try:
        for queue_id in range(4):
            offset = 0
            while True:
                header = pull_ext("bench-c", TOPIC, queue_id, offset)
                response = await client.invoke(
                    addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header), 10
                )
                if response.code != ResponseCode.SUCCESS:
                    break
                next_offset = int(response.ext_fields["nextBeginOffset"])
                total += next_offset - offset
                total_bytes += response.body_length
                offset = next_offset
    finally:
        await client.close()
    return total, total_bytes, time.perf_counter() - started


def report(label: str, count: int, elapsed: float, rts: list[float]) -> None:
    rts_ms = sorted(r * 1000 for r in rts)
    p99 = rts_ms[min(len(rts_ms) - 1, int(len(rts_ms) * 0.99))]
    print(
        f"{label}: {count} msgs in {elapsed:.2f}s = {count / elapsed:,.0f} msg/s; "
        f"RT mean {statistics.mean(rts_ms):.2f} ms, "
        f"p50 {statistics.median(rts_ms):.2f} ms, p99 {p99:.2f} ms"
    )


async def run(addr: str, seconds: float, size: int) -> None:
    client = RemotingClient()
    try:
        header = create_topic_ext(TOPIC)
        created = await client.invoke(
            addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), 5
        )
        assert created.code == ResponseCode.SUCCESS, created.remark
    finally:
        await client.close()
    for concurrency in (1, 4):
        count, elapsed, rts = await send_phase(addr, concurrency, seconds, size)
        report(f"send {size} B x{concurrency} sender(s)", count, elapsed, rts)
    total, total_bytes, elapsed = await consume_all(addr)
    print(
        f"catch-up consume: {total} msgs ({total_bytes / 1e6:.1f} MB) in {elapsed:.2f}s = "
        f"{total / elapsed:,.0f} msg/s, {total_bytes / 1e6 / elapsed:.1f} MB/s (1 puller, 32/pull)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="orbitmq bench broker-smoke", description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--flush", default="ASYNC_FLUSH", choices=("ASYNC_FLUSH", "SYNC_FLUSH"))
    parser.add_argument("--broker", help="benchmark a running broker instead of starting `orbitmq serve`")
    args = parser.parse_args(argv)
    if args.broker:
        asyncio.run(run(args.broker, args.seconds, args.size))
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        start_serve(Path(tmp), expect=("namesrv", "broker"), flushDiskType=args.flush) as serve,
    ):
        print(f"orbitmq serve ({args.flush}) broker at {serve.broker_addr}")
        asyncio.run(run(serve.broker_addr, args.seconds, args.size))


if __name__ == "__main__":
    main()
