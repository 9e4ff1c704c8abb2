"""A slow disk under real brokers (orbitmq.testing.slowfs: every fdatasync sleeps first).

A SYNC_FLUSH broker whose commit log is on it answers sends FLUSH_DISK_TIMEOUT (10) after
syncFlushTimeout, while its event loop goes on serving: other connections' pulls, offset queries and
route queries, and an ASYNC_FLUSH broker's sends on the same disk, keep latencies far below the injected
delay. The broker names the slow flush in a WARN line and in its metrics, and recovers with the disk.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess, start_broker, start_namesrv
from orbitmq.testing.metrics import Samples, listening_url, scrape, value
from orbitmq.testing.slowfs import SlowDisk

from .conftest import Raw

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

FSYNC_DELAY = 1.5  # s each fdatasync sleeps while the disk is slow
WRITE_STALL = 1.5  # s each write (the page cache's writeback to the disk) stalls
SYNC_FLUSH_TIMEOUT_MS = 400
LATENCY_BOUND = 0.3  # s: the p99 other requests must stay under (the delay is 5x that)
WATCH_SECONDS = 6.0
TOPIC = "SlowDisk"
BIG_BODY = b"a" * 65536
BIG_SEGMENT = 64 * 1024 * 1024  # commit-log segment bytes: no roll while watching
SMALL_SEGMENT = 1024 * 1024  # a roll every 16 of the ASYNC_FLUSH broker's sends
SLOW_LINE = re.compile(r"slow disk: .*? (\d+) ms")


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def latencies(call: Callable[[], Awaitable[RemotingCommand]], until: float) -> list[float]:
    """Call repeatedly until loop time `until`; each answer must be SUCCESS; the latencies in s."""
    loop = asyncio.get_running_loop()
    out: list[float] = []
    while loop.time() < until:
        started = time.perf_counter()
        response = await call()
        out.append(time.perf_counter() - started)
        assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
        await asyncio.sleep(0.01)
    return out


async def sync_sends(raw: Raw, until: float) -> list[tuple[int, float]]:
    """SYNC_FLUSH sends one after another until `until`: (response code, seconds) each."""
    loop = asyncio.get_running_loop()
    out: list[tuple[int, float]] = []
    n = 0
    while loop.time() < until:
        started = time.perf_counter()
        response = await raw.send(TOPIC, b"slow %d" % n)
        out.append((response.code, time.perf_counter() - started))
        n += 1
    return out


def brokers(
    tmp_path: Path, disk: SlowDisk, ns: ServerProcess, segment: int
) -> tuple[ServerProcess, ServerProcess]:
    """broker-sync (SYNC_FLUSH) and broker-async (ASYNC_FLUSH, whose flusher fdatasyncs every 100 ms
    when there is anything to flush: on this disk, all the time), both with their store on `disk`."""
    confs: dict[str, dict[str, Any]] = {
        "sync": {"flushDiskType": "SYNC_FLUSH", "syncFlushTimeout": SYNC_FLUSH_TIMEOUT_MS},
        "async": {
            "flushDiskType": "ASYNC_FLUSH",
            "flushIntervalCommitLog": 100,
            "flushCommitLogLeastPages": 0,
        },
    }
    started: list[ServerProcess] = []
    try:
        for name, conf in confs.items():
            started.append(
                start_broker(
                    tmp_path,
                    ns.address,
                    broker_name=f"broker-{name}",
                    storePathRootDir=disk.mountpoint / name,
                    metricsPort=0,
                    mappedFileSizeCommitLog=segment,
                    **conf,
                )
            )
    except BaseException:
        for broker in started:
            broker.stop()
        raise
    return started[0], started[1]


@dataclass
class Observed:
    sends: list[tuple[int, float]]  # the SYNC_FLUSH broker's sends while the disk was slow: code, s
    others: dict[str, list[float]]  # other requests' latencies meanwhile, s
    during: Samples  # the SYNC_FLUSH broker's metrics at the end of the slow period
    after: Samples  # ... and once the disk was fast again and a send succeeded
    recovered: RemotingCommand  # that send's answer
    log: str  # the SYNC_FLUSH broker's log

    def report(self) -> dict[str, tuple[int, float, float, int]]:
        """Per request kind: (samples, p99 s, max s, samples over 1 s)."""
        return {
            name: (len(s), round(p99(s), 3), round(max(s), 3), sum(x > 1 for x in s))
            for name, s in self.others.items()
        }


async def observe(
    tmp_path: Path, disk: SlowDisk, *, fsync: float = 0.0, write: float = 0.0, segment: int = BIG_SEGMENT
) -> Observed:
    """Both brokers on the slow disk; for WATCH_SECONDS with the given delays, SYNC_FLUSH sends on one
    connection and every other kind of request on its own connection, each timed."""
    with start_namesrv(tmp_path) as ns:
        sync, unsynced = brokers(tmp_path, disk, ns, segment)
        with sync, unsynced:
            raws = {
                name: Raw(addr)
                for name, addr in [
                    ("sender", sync.broker_addr),
                    ("puller", sync.broker_addr),
                    ("offsets", sync.broker_addr),
                    ("routes", ns.address),
                    ("async", unsynced.broker_addr),
                    ("async-puller", unsynced.broker_addr),
                ]
            }
            try:
                for broker in ("sender", "async"):
                    assert (await raws[broker].create_topic(TOPIC)).code == ResponseCode.SUCCESS
                # A fast disk first: SYNC_FLUSH sends succeed.
                for _ in range(3):
                    assert (await raws["sender"].send(TOPIC, b"fast")).code == ResponseCode.SUCCESS
                    assert (await raws["async"].send(TOPIC, b"fast")).code == ResponseCode.SUCCESS
                deadline = time.monotonic() + 20
                while (await raws["routes"].route(TOPIC)).code != ResponseCode.SUCCESS:
                    assert time.monotonic() < deadline, "no route for the topic"
                    await asyncio.sleep(0.2)

                disk.set_delays(fsync=fsync, write=write)
                until = asyncio.get_running_loop().time() + WATCH_SECONDS
                max_offset = {"topic": TOPIC, "queueId": "0"}
                sends, *others = await asyncio.gather(
                    sync_sends(raws["sender"], until),
                    latencies(lambda: raws["puller"].pull(TOPIC, 0), until),
                    latencies(lambda: raws["offsets"].call(RequestCode.GET_MAX_OFFSET, max_offset), until),
                    latencies(lambda: raws["routes"].route(TOPIC), until),
                    # 64 KiB each: with SMALL_SEGMENT the commit log rolls every 16 sends.
                    latencies(lambda: raws["async"].send(TOPIC, BIG_BODY), until),
                    latencies(lambda: raws["async-puller"].pull(TOPIC, 0), until),
                )
                url = listening_url(sync)
                during = await asyncio.to_thread(scrape, url)
                disk.set_delays()
                await asyncio.sleep(2 * max(fsync, write))  # the last slow flush ends
                recovered = await raws["sender"].send(TOPIC, b"fast again")
                after = await asyncio.to_thread(scrape, url)
            finally:
                for raw in raws.values():
                    await raw.close()
    names = ["sync broker pull", "sync broker GET_MAX_OFFSET", "namesrv route", "async send", "async pull"]
    return Observed(
        sends=sends,
        others=dict(zip(names, others, strict=True)),
        during=during,
        after=after,
        recovered=recovered,
        log=sync.stderr_path.read_text(errors="replace"),
    )


async def test_slow_fdatasync_times_sends_out_and_the_loop_keeps_serving(
    tmp_path: Path, slow_disk: SlowDisk
) -> None:
    seen = await observe(tmp_path, slow_disk, fsync=FSYNC_DELAY)
    report = seen.report()
    print(f"fdatasync +{FSYNC_DELAY} s: (samples, p99 s, max s, over 1 s) {report}")
    print(f"SYNC_FLUSH sends (code, s): {seen.sends}")
    # The sends: each waited syncFlushTimeout for a flush that took longer, then FLUSH_DISK_TIMEOUT.
    assert seen.sends, "no SYNC_FLUSH send was answered while the disk was slow"
    assert {code for code, _ in seen.sends} == {ResponseCode.FLUSH_DISK_TIMEOUT}, seen.sends
    timeout = SYNC_FLUSH_TIMEOUT_MS / 1000
    assert all(timeout * 0.9 <= took < FSYNC_DELAY for _, took in seen.sends), seen.sends
    # Everything else went on at its own pace: the loop never waited for the disk.
    for name, samples in seen.others.items():
        assert len(samples) >= 5, report
        assert p99(samples) < LATENCY_BOUND, f"{name}: {report}"
    # Reported: WARN lines naming the flush time (a flush stuck in its sync is named while it runs), and
    # the metrics: the looks that found the flush slow, and the stuck flush's time once it ended.
    warned = [
        int(match.group(1))
        for line in seen.log.splitlines()
        if " WARNING " in line and (match := SLOW_LINE.search(line))
    ]
    assert warned and max(warned) >= FSYNC_DELAY * 1000, warned
    assert value(seen.during, "orbitmq_slow_flushes_total") >= 2
    flushing = value(seen.after, "orbitmq_flush_seconds_total") - value(
        seen.during, "orbitmq_flush_seconds_total"
    )
    assert flushing >= FSYNC_DELAY, flushing
    # And with the disk fast again, SYNC_FLUSH sends succeed again.
    assert seen.recovered.code == ResponseCode.SUCCESS, seen.recovered.remark


@pytest.mark.xfail(
    strict=True,
    reason="known gap: an append into the commit log's tail page waits while the flusher's writeback of "
    "that page stalls (stable pages: page fault -> fuse_page_mkwrite -> folio_wait_writeback), on the loop",
)
async def test_stalled_writes_do_not_hold_the_loop(tmp_path: Path, slow_disk: SlowDisk) -> None:
    seen = await observe(tmp_path, slow_disk, write=WRITE_STALL)
    report = seen.report()
    print(
        f"writes +{WRITE_STALL} s: (samples, p99 s, max s, over 1 s) {report}; SYNC_FLUSH sends {seen.sends}"
    )
    assert seen.recovered.code == ResponseCode.SUCCESS, seen.recovered.remark
    for name, samples in seen.others.items():
        assert p99(samples) < LATENCY_BOUND, f"{name}: {report}"


@pytest.mark.xfail(
    strict=True,
    reason="known gap: a commit-log roll on the loop creates the next segment's file while the flusher's "
    "directory sync holds that directory's lock (FUSE holds it over FSYNCDIR), so the roll waits for it",
)
async def test_segment_rolls_during_slow_directory_syncs_do_not_hold_the_loop(
    tmp_path: Path, slow_disk: SlowDisk
) -> None:
    seen = await observe(tmp_path, slow_disk, fsync=FSYNC_DELAY, segment=SMALL_SEGMENT)
    report = seen.report()
    print(f"fdatasync +{FSYNC_DELAY} s, 1 MiB segments: (samples, p99 s, max s, over 1 s) {report}")
    assert seen.recovered.code == ResponseCode.SUCCESS, seen.recovered.remark
    for name, samples in seen.others.items():
        assert max(samples) < LATENCY_BOUND, f"{name}: {report}"


async def test_a_segment_roll_leaves_its_directory_sync_to_the_flusher(
    tmp_path: Path, slow_disk: SlowDisk
) -> None:
    """Rolling to a new commit-log segment (and creating the one after it) happens on the loop; the new
    directory entries' sync must not (the flusher does it before it counts any of their data flushed)."""
    minute = 60_000  # the flusher stays asleep: only the roll itself could sync anything
    conf = {"flushIntervalCommitLog": minute, "flushCommitLogThoroughInterval": minute}
    with start_namesrv(tmp_path) as ns:
        broker = start_broker(
            tmp_path,
            ns.address,
            storePathRootDir=slow_disk.mountpoint / "store",
            mappedFileSizeCommitLog=SMALL_SEGMENT,
            **conf,
        )
        with broker:
            raw = Raw(broker.broker_addr)
            try:
                assert (await raw.create_topic(TOPIC)).code == ResponseCode.SUCCESS
                assert (await raw.send(TOPIC, b"first")).code == ResponseCode.SUCCESS
                slow_disk.set_delays(fsync=FSYNC_DELAY)
                took: list[float] = []
                for _ in range(3 * SMALL_SEGMENT // len(BIG_BODY)):  # three rolls
                    started = time.perf_counter()
                    assert (await raw.send(TOPIC, BIG_BODY)).code == ResponseCode.SUCCESS
                    took.append(time.perf_counter() - started)
                slow_disk.set_delays()
            finally:
                await raw.close()
    segments = sorted(p.name for p in (slow_disk.mountpoint / "store" / "commitlog").iterdir())
    assert len(segments) >= 4, segments
    assert max(took) < LATENCY_BOUND, f"the slowest of {len(took)} sends took {max(took):.3f} s"
