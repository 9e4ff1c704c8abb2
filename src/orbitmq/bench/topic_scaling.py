"""W9, topic scaling: send rate, pull latency and broker RSS with 1..N topics of `--queues` queues, on an
empty store and on one holding a backlog of `--backlog` messages (each level a fresh `orbitmq serve`).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import time
from pathlib import Path

from orbitmq.bench import workloads as wl
from orbitmq.bench.cpu import rss_mib, rss_split_mib
from orbitmq.bench.driver import ServerHandle, make_body
from orbitmq.bench.orbitmq_server import start_orbitmq
from orbitmq.bench.progress import Progress
from orbitmq.bench.raw_driver import RawDriver, RawQueue
from orbitmq.bench.result import Measurement
from orbitmq.bench.stats import LatencyRecorder, LatencySummary

SYSTEM = "orbitmq"
SENDERS = 4
PULL_SAMPLES = 200
PULL_BATCH = 32
PULL_GROUP = "bench_W9_pull"
# Backlog writes: batches of this many messages, this many batches in flight.
BACKLOG_BATCH = 128
BACKLOG_IN_FLIGHT = 4
BACKLOG_MAX_SECONDS = 1800.0
SETTLE_SECONDS = 3.0


async def fill_backlog(driver: RawDriver, topic: str, messages: int, size: int, progress: Progress) -> float:
    """Store `messages` messages in `topic` with batch sends; returns the seconds it took (stops early at
    BACKLOG_MAX_SECONDS: the caller reads the count reached from the queues)."""
    progress.begin(f"W9 writing a backlog of {messages:,} messages", BACKLOG_MAX_SECONDS)
    batch = [make_body(size)] * BACKLOG_BATCH
    written = 0
    t0 = time.monotonic()
    deadline = t0 + BACKLOG_MAX_SECONDS

    async def writer() -> None:
        nonlocal written
        while written < messages and time.monotonic() < deadline:
            n = min(BACKLOG_BATCH, messages - written)
            written += n  # claimed before the await so that writers never overshoot
            await driver.send_batch(topic, batch[:n])
            progress.count = written
            progress.tick()

    await asyncio.gather(*(writer() for _ in range(BACKLOG_IN_FLIGHT)))
    return time.monotonic() - t0


async def pull_latencies(
    driver: RawDriver, samples: list[tuple[str, RawQueue, int]]
) -> tuple[LatencySummary, int]:
    """Time one pull per (topic, queue, offset); returns the summary and how many pulls found messages."""
    recorder = LatencyRecorder()
    found = 0
    clock = time.perf_counter_ns
    for topic, queue, offset in samples:
        t = clock()
        got = await driver.pull_at(topic, PULL_GROUP, queue, offset, PULL_BATCH)
        recorder.record(clock() - t)
        found += got > 0
    return recorder.summary(), found


async def newest_samples(
    driver: RawDriver, topics: list[str], rng: random.Random
) -> list[tuple[str, RawQueue, int]]:
    """(topic, queue, offset of its newest PULL_BATCH messages) for PULL_SAMPLES random queues; offsets
    are read (GET_MAX_OFFSET) before any pull is timed."""
    samples = []
    for _ in range(PULL_SAMPLES):
        topic = rng.choice(topics)
        queue = rng.choice(driver.queues[topic])
        newest = await driver.max_offset(queue, topic)
        samples.append((topic, queue, max(0, newest - PULL_BATCH)))
    return samples


async def oldest_samples(
    driver: RawDriver, backlog_topic: str | None, topics: list[str], rng: random.Random
) -> list[tuple[str, RawQueue, int]]:
    """Random offsets across the backlog topic's queues; without a backlog, offset 0 of random queues."""
    if backlog_topic is None:
        return [
            (topic, rng.choice(driver.queues[topic]), 0)
            for topic in (rng.choice(topics) for _ in range(PULL_SAMPLES))
        ]
    queues = driver.queues[backlog_topic]
    tops = {q.queue_id: await driver.max_offset(q, backlog_topic) for q in queues}
    samples = []
    for _ in range(PULL_SAMPLES):
        queue = rng.choice(queues)
        samples.append((backlog_topic, queue, rng.randrange(max(1, tops[queue.queue_id] - PULL_BATCH))))
    return samples


async def first_touch(driver: RawDriver, topics: list[str], queues: int, size: int) -> float:
    """Send one message into every queue of `topics` (SENDERS senders); returns msgs/s. The first message
    of a queue creates its consume-queue file: a cost paid once per queue, measured apart from the
    steady-state send rate."""
    body = make_body(size)
    work = [t for t in topics for _ in range(queues)]  # the driver rotates a topic's queues per send
    t0 = time.perf_counter()

    async def sender(k: int) -> None:
        for topic in work[k::SENDERS]:
            await driver.send(topic, body)

    # Sender k takes every SENDERS-th item: a topic's `queues` sends split over senders still reach each
    # queue once, as the rotation is per topic, not per sender.
    await asyncio.gather(*(sender(k) for k in range(SENDERS)))
    return len(work) / max(time.perf_counter() - t0, 1e-9)


async def measure_send(
    driver: RawDriver, topics: list[str], m: Measurement, args: argparse.Namespace, progress: Progress
) -> None:
    """SENDERS sync senders, each walking the topics round robin (sender k starts at topic k)."""
    case = wl.Case(progress, time.monotonic() + args.duration, args.messages * 10)
    progress.begin(f"W9 {m.case}: sending", args.duration)
    recorder = LatencyRecorder()
    body = make_body(args.size)

    async def sender(offset: int) -> None:
        i = offset
        clock = time.perf_counter_ns
        while case.running:
            t = clock()
            try:
                await driver.send(topics[i % len(topics)], body)
            except Exception as exc:
                case.error(exc)
                continue
            recorder.record(clock() - t)
            case.add(1)
            i += SENDERS

    async def work() -> int:
        await asyncio.gather(*(sender(k) for k in range(SENDERS)))
        return case.count

    await wl.measure(driver, m, work)
    m.latency = recorder.summary()
    m.errors = case.errors
    if case.first_error:
        m.note = f"first error: {case.first_error}"


async def interleaved_sends(
    driver: RawDriver,
    topics: list[str],
    levels: list[Measurement],
    args: argparse.Namespace,
    progress: Progress,
) -> list[list[Measurement]]:
    """The send rows of every level, the levels taking turns, `--repeat` rounds."""
    runs: list[list[Measurement]] = [[] for _ in levels]
    for _ in range(max(1, args.repeat)):
        for i, level in enumerate(levels):
            m = Measurement("W9", level.case, SYSTEM, body_size=args.size)
            await measure_send(driver, topics[: int(level.extra["topics"])], m, args, progress)
            progress.end(f"W9 {m.case}: {m.msgs_per_s:,.0f} msgs/s")
            runs[i].append(m)
    return runs


def merge_send(level: Measurement, runs: list[Measurement]) -> Measurement:
    """The median send run of a level, carrying the level's memory, pull and set-up figures."""
    ordered = sorted(runs, key=lambda m: m.msgs_per_s)
    chosen = ordered[(len(ordered) - 1) // 2]
    chosen.extra.update(level.extra)
    notes = [n for n in (chosen.note, level.note) if n]
    if len(runs) > 1:
        notes.append(f"median of {len(runs)} runs ({', '.join(f'{m.msgs_per_s:,.0f}' for m in runs)})")
    chosen.note = "; ".join(notes)
    return chosen


def add_memory(m: Measurement, server: ServerHandle) -> str:
    pid = server.pids[0] if server.pids else None
    if pid is None:
        return ""
    rss = rss_mib(pid)
    split = rss_split_mib(pid)
    if rss is None:
        return ""
    m.extra["server_rss_mib"] = rss
    text = f"server RSS {rss:.0f} MiB"
    if split is not None:
        m.extra["server_rss_anon_mib"], m.extra["server_rss_file_mib"] = split
        text += f" ({split[0]:.0f} anon + {split[1]:.0f} mapped files)"
    return text


async def run_level(
    workdir: Path, args: argparse.Namespace, backlog: int, progress: Progress
) -> list[Measurement]:
    """Every topic count of `args.topics` on a fresh server whose store holds `backlog` messages."""
    results: list[Measurement] = []
    rng = random.Random(0x9)
    server = await asyncio.to_thread(start_orbitmq, workdir, None)
    driver = RawDriver(server.address, server)
    try:
        await driver.open()
        backlog_topic: str | None = None
        fill_note = ""
        if backlog > 0:
            backlog_topic = wl.new_topic("W9backlog")
            await driver.create_topic(backlog_topic, args.queues)
            seconds = await fill_backlog(driver, backlog_topic, backlog, args.size, progress)
            stored = sum([await driver.max_offset(q, backlog_topic) for q in driver.queues[backlog_topic]])
            backlog = stored
            fill_note = f"; backlog written in {seconds:.0f} s ({stored / max(seconds, 1e-9):,.0f} msgs/s)"
        topics: list[str] = []
        previous = 0
        for count in sorted(args.topics):
            progress.begin(f"W9 creating {count} topics", 600.0)
            t0 = time.monotonic()
            while len(topics) < count:
                topic = wl.new_topic("W9")
                await driver.create_topic(topic, args.queues)
                topics.append(topic)
                progress.count = len(topics)
                progress.tick()
            created = time.monotonic() - t0
            progress.set_phase("first message into each new queue")
            touched = await first_touch(driver, topics[previous:], args.queues, args.size)
            previous = len(topics)
            # The flusher makes each new queue's directory entry durable on its next rounds (thousands of
            # directory fsyncs after a 1,000-topic first touch): let that pass before the steady state.
            await asyncio.sleep(min(SETTLE_SECONDS, args.duration))
            label = f"{count} topic{'s' if count != 1 else ''}, backlog {backlog:,}"
            m = Measurement("W9", label, SYSTEM, body_size=args.size)
            progress.set_phase("pull latency")
            new, new_found = await pull_latencies(driver, await newest_samples(driver, topics, rng))
            old, old_found = await pull_latencies(
                driver, await oldest_samples(driver, backlog_topic, topics, rng)
            )
            m.extra.update(
                {
                    "backlog_messages": float(backlog),
                    "topics": float(count),
                    "pull_new_p50_us": new.p50_us,
                    "pull_new_p99_us": new.p99_us,
                    "pull_old_p50_us": old.p50_us,
                    "pull_old_p99_us": old.p99_us,
                    "pulls_with_messages": float(new_found + old_found),
                    "seconds_to_create_topics": created,
                    "first_touch_msgs_per_s": touched,
                }
            )
            memory = add_memory(m, server)
            pulls = (
                f"pull p50/p99 newest {new.p50_us:,.0f}/{new.p99_us:,.0f} µs, "
                f"{'backlog' if backlog_topic else 'oldest'} {old.p50_us:,.0f}/{old.p99_us:,.0f} µs"
            )
            first = f"first message into each new queue {touched:,.0f} msgs/s (not in the figure)"
            parts = [p for p in (memory, pulls, first) if p]
            m.note = "; ".join(parts) + fill_note
            results.append(m)
            progress.end(f"W9 {m.case}: {m.note}")
        sent = await interleaved_sends(driver, topics, results, args, progress)
        results = [merge_send(level, runs) for level, runs in zip(results, sent, strict=True)]
    finally:
        await driver.close()
        await asyncio.to_thread(server.stop)
        if not getattr(args, "keep", False):
            # A 10 M-message backlog is ~12 GiB of store: never leave it behind on a shared disk.
            await asyncio.to_thread(shutil.rmtree, workdir, True)
    return results


async def topic_scaling(workdir: Path, args: argparse.Namespace, progress: Progress) -> list[Measurement]:
    """Every backlog level of `args.backlog`, each on a fresh server (its own store, removed afterwards
    unless --keep): the backlog is written first (batch sends into a topic of its own), then the topic
    counts run in ascending order on that server (the topics of the smaller counts stay). Per count:
    - first touch: one message into every new queue, which creates its consume-queue file (msgs/s in the
      note, outside the measured window: the rows compare steady states);
    - send: 4 sync senders, round robin over the count's topics, for --duration seconds (msgs/s, RT
      p50/p99), measured once every count is set up, the counts taking turns, --repeat times (the median
      run is reported): every count sees the same server state, and a busy moment hits each count alike;
    - pull latency (single PULL_MESSAGE requests of 32 messages, no long polling), p50/p99 of
      `PULL_SAMPLES` pulls each: "new" = the newest 32 messages of random queues of the measured topics,
      "old" = random offsets of the backlog topic (the first messages of the measured topics on an empty
      store). The page cache usually holds the whole log, so "old" measures the read path, not a seek;
    - the server's RSS, split into anonymous memory and mapped store-file pages (RssFile).
    """
    results: list[Measurement] = []
    for backlog in sorted(set(args.backlog)):
        results += await run_level(workdir / f"backlog-{backlog}", args, backlog, progress)
    return results
