"""The client-side workloads W1-W4 (and W5's sends), written once against `Driver`; each runs one case
against one driver, bounded by a deadline and a message count, and knows no particular system.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from orbitmq.bench.cpu import ProcessCpu
from orbitmq.bench.driver import Driver, make_body, read_stamp, stamp_body
from orbitmq.bench.progress import Progress
from orbitmq.bench.ratelimit import RateLimiter
from orbitmq.bench.result import Measurement
from orbitmq.bench.stats import LatencyRecorder

# A case whose sends keep failing is abandoned after this many errors (the first is reported).
MAX_ERRORS = 100
# W3 sequence numbers start here (0 and 1 are W4's warm-up stamps).
SEQUENCE_BASE = 2


@dataclass
class WorkloadConfig:
    duration: float = 10.0  # measured seconds per case (W1, W2, W4)
    body_size: int = 1024
    queues: int = 8
    senders: Sequence[int] = (1, 4)  # W1 / W5 cases
    in_flight: int = 256  # W2 pipelined window
    batch: int = 32  # W2 batch size
    batch_senders: int = 4  # W2 concurrent batch senders
    messages: int = 100_000  # W3 preload; also the cap on any case's count
    rate: float = 2000.0  # W4 msgs/s
    drain_timeout: float = 120.0  # W3 bound on the drain


class Case:
    """Shared state of one running case: counters, errors, the deadline, the progress line."""

    def __init__(self, progress: Progress, deadline: float, max_messages: int) -> None:
        self.progress = progress
        self.deadline = deadline
        self.max_messages = max_messages
        self.count = 0
        self.errors = 0
        self.first_error = ""
        self.stopped = False

    def add(self, n: int) -> None:
        self.count += n
        self.progress.count = self.count
        if self.count >= self.max_messages:
            self.stopped = True

    def error(self, exc: BaseException) -> None:
        self.errors += 1
        if not self.first_error:
            self.first_error = f"{type(exc).__name__}: {exc}"
        if self.errors >= MAX_ERRORS:
            self.stopped = True

    @property
    def running(self) -> bool:
        return not self.stopped and time.monotonic() < self.deadline


async def _tick(progress: Progress) -> None:
    while True:
        progress.tick()
        await asyncio.sleep(0.5)


async def measure(
    driver: Driver,
    measurement: Measurement,
    work: Callable[[], Awaitable[int]],
) -> Measurement:
    """Run `work` (returns the message count) inside the CPU/wall-clock window; fill `measurement`.

    Throughput, latency and the CPU of the server processes and of this process cover the measured window
    only (preloading and warm-up are outside it).
    """
    server_cpu = ProcessCpu(driver.server_pids, all_threads=driver.server_all_threads)
    client_cpu = ProcessCpu([os.getpid()], include_descendants=False)
    s0, c0, t0 = server_cpu.snapshot(), client_cpu.snapshot(), time.perf_counter()
    count = await work()
    wall = time.perf_counter() - t0
    s1, c1 = server_cpu.snapshot(), client_cpu.snapshot()
    measurement.messages = count
    measurement.seconds = wall
    measurement.server_cores = ProcessCpu.delta_cores(s0, s1, wall)
    measurement.client_cores = ProcessCpu.delta_cores(c0, c1, wall)
    measurement.server_wait = ProcessCpu.max_wait_fraction(s0, s1, wall)
    measurement.client_wait = ProcessCpu.max_wait_fraction(c0, c1, wall)
    return measurement


def new_topic(workload: str) -> str:
    # Names valid for RocketMQ topics, NATS stream names/subjects and Redis keys alike.
    return f"bench_{workload}_{uuid.uuid4().hex[:10]}"


async def _with_progress(progress: Progress, coro: Awaitable[Measurement]) -> Measurement:
    ticker = asyncio.ensure_future(_tick(progress))
    try:
        return await coro
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker


def _finish(m: Measurement, case: Case) -> Measurement:
    m.errors = case.errors
    if case.first_error:
        m.note = (m.note + "; " if m.note else "") + f"first error: {case.first_error}"
    return m


async def sync_send(
    driver: Driver, cfg: WorkloadConfig, progress: Progress, senders: int, workload: str = "W1"
) -> Measurement:
    """W1 (and W5): `senders` concurrent senders, each waiting for the ack before the next send."""
    label = f"{senders} sender" + ("s" if senders != 1 else "")
    m = Measurement(workload, label, driver.system, body_size=cfg.body_size)
    topic = new_topic(workload)
    await driver.create_topic(topic, cfg.queues)
    body = make_body(cfg.body_size)
    recorder = LatencyRecorder()
    progress.begin(f"{workload} {label} {driver.system}", cfg.duration)
    case = Case(progress, time.monotonic() + cfg.duration, cfg.messages * 10)

    async def sender() -> None:
        clock = time.perf_counter_ns
        while case.running:
            t = clock()
            try:
                await driver.send(topic, body)
            except Exception as exc:
                case.error(exc)
                continue
            recorder.record(clock() - t)
            case.add(1)

    async def work() -> int:
        await asyncio.gather(*(sender() for _ in range(senders)))
        return case.count

    await _with_progress(progress, measure(driver, m, work))
    m.latency = recorder.summary()
    await driver.delete_topic(topic)
    return _finish(m, case)


async def pipelined_send(driver: Driver, cfg: WorkloadConfig, progress: Progress) -> Measurement:
    """W2: keep up to `in_flight` sends outstanding (two windows of half each, so the pipe never drains)."""
    m = Measurement("W2", f"pipelined {cfg.in_flight}", driver.system, body_size=cfg.body_size)
    topic = new_topic("W2")
    await driver.create_topic(topic, cfg.queues)
    body = make_body(cfg.body_size)
    window = [body] * max(1, cfg.in_flight // 2)
    progress.begin(f"W2 pipelined {driver.system}", cfg.duration)
    case = Case(progress, time.monotonic() + cfg.duration, cfg.messages * 10)
    recorder = LatencyRecorder()

    async def worker() -> None:
        clock = time.perf_counter_ns
        while case.running:
            t = clock()
            try:
                await driver.send_window(topic, window)
            except Exception as exc:
                case.error(exc)
                continue
            recorder.record(clock() - t)
            case.add(len(window))

    async def work() -> int:
        await asyncio.gather(worker(), worker())
        return case.count

    await _with_progress(progress, measure(driver, m, work))
    await driver.delete_topic(topic)
    m.note = "latency columns: time for a whole window of acks"
    m.latency = recorder.summary()
    return _finish(m, case)


async def batch_send(driver: Driver, cfg: WorkloadConfig, progress: Progress) -> Measurement:
    """W2: batches of `batch` messages, `batch_senders` senders each waiting for its batch's ack."""
    label = f"batch {cfg.batch} x{cfg.batch_senders}"
    m = Measurement("W2", label, driver.system, body_size=cfg.body_size)
    topic = new_topic("W2")
    await driver.create_topic(topic, cfg.queues)
    body = make_body(cfg.body_size)
    bodies = [body] * cfg.batch
    progress.begin(f"W2 {label} {driver.system}", cfg.duration)
    case = Case(progress, time.monotonic() + cfg.duration, cfg.messages * 10)
    recorder = LatencyRecorder()

    async def sender() -> None:
        clock = time.perf_counter_ns
        while case.running:
            t = clock()
            try:
                await driver.send_batch(topic, bodies)
            except Exception as exc:
                case.error(exc)
                continue
            recorder.record(clock() - t)
            case.add(len(bodies))

    async def work() -> int:
        await asyncio.gather(*(sender() for _ in range(cfg.batch_senders)))
        return case.count

    await _with_progress(progress, measure(driver, m, work))
    await driver.delete_topic(topic)
    m.latency = recorder.summary()
    m.note = "latency columns: batch round trip"
    return _finish(m, case)


async def preload(driver: Driver, topic: str, count: int, template: bytes, progress: Progress) -> int:
    """Store `count` messages as fast as the driver can (pipelined windows); returns how many stored.

    Message i carries i + SEQUENCE_BASE in its first 8 bytes, so the consumer can count each message
    once: a redelivered message must not pass for throughput.
    """
    window = 256
    stored = 0
    progress.set_phase(f"preloading {count:,}")
    while stored < count:
        n = min(window, count - stored)
        bodies = [stamp_body(template, SEQUENCE_BASE + stored + k) for k in range(n)]
        await driver.send_window(topic, bodies)
        stored += n
        progress.count = stored
        progress.tick()
    return stored


async def catch_up(driver: Driver, cfg: WorkloadConfig, progress: Progress) -> Measurement:
    """W3: preload `messages`, then time a consumer draining them from the start (offsets committed)."""
    total = cfg.messages
    m = Measurement("W3", f"drain {total:,}", driver.system, body_size=cfg.body_size)
    topic = new_topic("W3")
    await driver.create_topic(topic, cfg.queues)
    progress.begin(f"W3 catch-up {driver.system}", cfg.drain_timeout)
    await preload(driver, topic, total, make_body(cfg.body_size), progress)
    progress.set_phase("draining")
    case = Case(progress, time.monotonic() + cfg.drain_timeout, total)
    stop = asyncio.Event()

    started = time.perf_counter()
    seen = bytearray(total)
    duplicates = 0

    def on_bodies(bodies: Sequence[bytes]) -> None:
        nonlocal duplicates
        if case.count == 0:
            m.extra["first_message_s"] = time.perf_counter() - started
        fresh = 0
        for body in bodies:
            index = read_stamp(body) - SEQUENCE_BASE
            if 0 <= index < total and not seen[index]:
                seen[index] = 1
                fresh += 1
            else:
                duplicates += 1
        case.add(fresh)
        if case.count >= total:
            stop.set()

    async def work() -> int:
        nonlocal started
        started = time.perf_counter()
        consumer = asyncio.ensure_future(driver.consume(topic, f"{topic}_group", on_bodies, stop))
        try:
            await asyncio.wait_for(stop.wait(), timeout=max(0.0, case.deadline - time.monotonic()))
        except TimeoutError:
            m.note = f"drain timed out after {cfg.drain_timeout:.0f} s"
        stop.set()
        try:
            await asyncio.wait_for(consumer, timeout=10)
        except TimeoutError:
            consumer.cancel()
        except Exception as exc:
            case.error(exc)
        return min(case.count, total)

    await _with_progress(progress, measure(driver, m, work))
    await driver.delete_topic(topic)
    if case.count < total:
        m.note = (m.note + "; " if m.note else "") + f"received {case.count:,} of {total:,}"
    if duplicates:
        m.extra["duplicates"] = float(duplicates)
        m.note = (m.note + "; " if m.note else "") + f"{duplicates:,} duplicate deliveries (not counted)"
    if "first_message_s" in m.extra:
        m.note = (m.note + "; " if m.note else "") + f"first message after {m.extra['first_message_s']:.2f} s"
    return _finish(m, case)


async def e2e_latency(driver: Driver, cfg: WorkloadConfig, progress: Progress) -> Measurement:
    """W4: send at a fixed rate while a consumer listens; latency = receive time - send time.

    The send time is a monotonic ns stamp in the body's first 8 bytes (sender and listener are this
    process), which resolves microseconds where a broker's millisecond born timestamp could not.
    """
    m = Measurement("W4", f"{cfg.rate:,.0f} msgs/s", driver.system, body_size=cfg.body_size)
    topic = new_topic("W4")
    await driver.create_topic(topic, cfg.queues)
    template = make_body(cfg.body_size)
    recorder = LatencyRecorder()
    stop = asyncio.Event()
    warmed = asyncio.Event()
    clock = time.perf_counter_ns
    received = 0
    progress.begin(f"W4 latency {driver.system}", cfg.duration)

    stamps_seen: set[int] = set()
    duplicates = 0

    def on_bodies(bodies: Sequence[bytes]) -> None:
        nonlocal received, duplicates
        now = clock()
        for body in bodies:
            stamp = read_stamp(body)
            if stamp <= 1:  # 0: the first warm-up message, 1: the paced warm-up
                if stamp == 0:
                    warmed.set()
                continue
            if stamp in stamps_seen:  # a redelivery is neither a new message nor a latency
                duplicates += 1
                continue
            stamps_seen.add(stamp)
            recorder.record(now - stamp)
            received += 1
        progress.count = received

    consumer = asyncio.ensure_future(driver.consume(topic, f"{topic}_group", on_bodies, stop))
    case = Case(progress, 0.0, cfg.messages * 10)
    pending: set[asyncio.Task[None]] = set()
    recording = False
    # How late each send started against its schedule: the rate is kept (no in-flight window to queue
    # behind), so a client or broker that cannot keep up shows here instead of in hidden waiting.
    behind = LatencyRecorder()

    async def send_one() -> None:
        try:
            await driver.send(topic, stamp_body(template, clock() if recording else 1))
        except Exception as exc:
            if recording:
                case.error(exc)

    async def paced(seconds: float) -> int:
        """Send at the rate for `seconds`; returns how many sends were started."""
        # Catch up to one second of overdue sends at once; only a longer stall drops from the schedule.
        limiter = RateLimiter(cfg.rate, time.monotonic(), max_burst=max(64, int(cfg.rate)))
        started = 0
        until = time.monotonic() + seconds
        while time.monotonic() < until and not case.stopped:
            now = time.monotonic()
            due = limiter.due(now)
            first = limiter.sent - due
            for i in range(due):
                if recording:
                    behind.record(max(0, int((now - limiter.due_at(first + i)) * 1e9)))
                task = asyncio.ensure_future(send_one())
                pending.add(task)
                task.add_done_callback(pending.discard)
                started += 1
            # Event-loop timers resolve milliseconds (libuv): sleeping less would spin the CPU, so at
            # high rates the due messages go out in small bursts once per millisecond.
            await asyncio.sleep(max(0.001, limiter.delay(time.monotonic())))
        if recording:
            m.extra["skipped_sends"] = float(limiter.skipped)
        if pending:
            await asyncio.wait(list(pending), timeout=10)
        return started

    try:
        # Warm-up: one unstamped message, so the measured window starts with a subscribed listener,
        # then a short paced phase whose latencies are discarded (connections, pools, caches).
        await driver.send(topic, stamp_body(template, 0))
        await asyncio.wait_for(warmed.wait(), timeout=30)
        progress.set_phase("warm-up")
        await paced(min(1.0, cfg.duration / 5))
        await asyncio.sleep(0.05)
        progress.set_phase("measuring")
        recording = True
        received = 0
        case.deadline = time.monotonic() + cfg.duration

        async def work() -> int:
            case.count = await paced(cfg.duration)
            # Give the listener a moment to receive the tail, bounded.
            until = time.monotonic() + 5
            while received < case.count - case.errors and time.monotonic() < until:
                await asyncio.sleep(0.01)
            return received

        await _with_progress(progress, measure(driver, m, work))
    except TimeoutError:
        m.note = "the listener never received the warm-up message"
    finally:
        stop.set()
        try:
            await asyncio.wait_for(consumer, timeout=10)
        except TimeoutError:
            consumer.cancel()
    m.latency = recorder.summary()
    m.extra["sent"] = float(case.count)
    if duplicates:
        m.extra["duplicates"] = float(duplicates)
        m.note = (m.note + "; " if m.note else "") + f"{duplicates:,} duplicate deliveries (not counted)"
    late = behind.summary()
    if late.count:
        m.extra["behind_p50_ms"] = late.p50_us / 1000
        m.extra["behind_p99_ms"] = late.p99_us / 1000
        m.extra["behind_max_ms"] = late.max_us / 1000
        m.note = (m.note + "; " if m.note else "") + (
            f"sends started behind schedule by p50 {late.p50_us / 1000:.2f} / p99 {late.p99_us / 1000:.2f}"
            f" / max {late.max_us / 1000:.1f} ms"
        )
    skipped_sends = m.extra.get("skipped_sends", 0.0)
    if skipped_sends > 0.01 * cfg.rate * cfg.duration:
        m.note = (m.note + "; " if m.note else "") + (
            f"could not keep the rate: {skipped_sends:,.0f} sends dropped from the schedule "
            "(the loop stalled for more than a second)"
        )
    lost = case.count - case.errors - received
    if lost > 0:
        m.note = (m.note + "; " if m.note else "") + f"{lost} sent messages not received in time"
    await driver.delete_topic(topic)
    return _finish(m, case)
