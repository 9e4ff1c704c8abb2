"""The broker's small periodic services, each a long-running loop owned (and cancelled) by BrokerApp:
persisting offsets, retention, client expiry, the transient pool's commit, the stats windows, and the
slow-disk watch (a WARN line when commit-log flushes get slow).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext

log = logging.getLogger("orbitmq.broker")


async def persist_loop(app: BrokerContext) -> None:
    """consumerOffset.json every `flushConsumerOffsetInterval` (5 s), delayOffset.json every
    `flushDelayOffsetInterval` (10 s); both again at shutdown.
    """
    offset_period = max(app.config.flush_consumer_offset_interval, 100) / 1000
    delay_period = max(app.config.flush_delay_offset_interval, 100) / 1000
    next_delay = delay_period
    while True:
        await asyncio.sleep(offset_period)
        try:
            app.offsets.persist_if_dirty()
        except Exception:
            log.exception("persisting consumer offsets failed")
        next_delay -= offset_period
        if next_delay <= 0:
            next_delay = delay_period
            try:
                app.schedule.persist()
            except Exception:
                log.exception("persisting delay offsets failed")


# A commit log flush slower than this is logged (RocketMQ logs its flushes over 500 ms too).
SLOW_FLUSH_SECONDS = 0.5
SLOW_FLUSH_QUIET = 5.0  # s between two WARN lines about one slow disk


class FlushWatch:
    """Looked at once a second by the stats loop: a WARN line (and `stats.slow_flushes`) when the commit
    log's flushes since the last look took over SLOW_FLUSH_SECONDS, or when one has been running that
    long (no round finished for longer than the flusher's interval plus that: it is stuck in a sync)."""

    def __init__(self, now: float) -> None:
        self.count = 0
        self.total = 0.0
        self.changed = now  # when `count` last moved
        self.quiet_until = 0.0

    def look(self, app: BrokerContext, now: float) -> None:
        flusher = app.store.flusher
        if flusher is None:
            return
        rounds = flusher.flush_count - self.count
        if rounds:
            average = (flusher.flush_seconds_total - self.total) / rounds
            self.count, self.total, self.changed = flusher.flush_count, flusher.flush_seconds_total, now
            last = flusher.flush_seconds_last
            if max(last, average) >= SLOW_FLUSH_SECONDS:
                self._warn(app, now, f"the last commit log flush took {last * 1000:.0f} ms ({rounds} since "
                           f"the last look, {average * 1000:.0f} ms on average)")  # fmt: skip
            return
        config = app.store.config
        interval = 0.01 if config.sync_flush else config.flush_interval_commit_log / 1000
        if now - self.changed >= interval + SLOW_FLUSH_SECONDS:
            self._warn(
                app, now, f"a commit log flush has been running for {(now - self.changed) * 1000:.0f} ms"
            )

    def _warn(self, app: BrokerContext, now: float, what: str) -> None:
        app.stats.slow_flushes += 1
        if now >= self.quiet_until:
            self.quiet_until = now + SLOW_FLUSH_QUIET
            log.warning("slow disk: %s (slow over %.0f ms)", what, SLOW_FLUSH_SECONDS * 1000)


async def stats_loop(app: BrokerContext) -> None:
    """Roll the broker's moving windows (`BrokerStats.roll`, every 5 s) and sample the store's
    counters (every second), so TPS figures are over fixed windows, not "since whoever asked last".
    """
    from orbitmq.broker.stats import ROLL_SECONDS

    ticks = 0
    per_roll = max(int(ROLL_SECONDS), 1)
    flushes = FlushWatch(app.clock.monotonic())
    while True:
        await asyncio.sleep(1.0)
        ticks += 1
        try:
            app.store.stats.sample()
            flushes.look(app, app.clock.monotonic())
            if ticks % per_roll == 0:
                app.stats.roll()
        except Exception:
            log.exception("rolling the stats windows failed")


async def retention_loop(app: BrokerContext) -> None:
    """`store.clean_expired_files()` every `retentionCheckInterval` (10 s); the store decides by
    fileReservedTime, deleteWhen and disk usage what may go.
    """
    period = max(app.config.retention_check_interval, 100) / 1000
    while True:
        await asyncio.sleep(period)
        try:
            app.store.clean_expired_files()
        except Exception:
            log.exception("cleaning expired store files failed")


async def client_housekeeping_loop(app: BrokerContext) -> None:
    """Producers and consumers silent for 120 s are dropped (consumer groups notified)."""
    expiry = app.config.client_channel_expired_timeout
    period = max(min(app.config.client_housekeeping_interval, expiry), 100) / 1000
    while True:
        await asyncio.sleep(period)
        now = app.clock.now_ms()
        for info in app.producers.scan_expired(now, expiry):
            log.info("producer channel %s (%s) expired", info.remote_address, info.client_id)
        for info in app.consumers.scan_expired(now, expiry, app.notify_enabled):
            log.info("consumer channel %s (%s) expired", info.remote_address, info.client_id)


async def commit_loop(app: BrokerContext) -> None:
    """With the store's transient store pool only (RocketMQ's CommitRealTimeService): `store.commit()`
    every `commitIntervalCommitLog` (200 ms); appended messages become readable and are dispatched (waking
    held pulls) only then. On the loop, because dispatch writes the consume queues and calls the arrival
    listeners, which belong to the store's single writer.
    """
    period = max(app.store.config.commit_interval_commit_log, 1) / 1000
    while True:
        await asyncio.sleep(period)
        try:
            app.store.commit()
        except Exception:
            log.exception("committing the commit log failed")
