"""The broker's small periodic services, each a long-running loop owned (and cancelled) by BrokerApp:
persisting offsets, retention, client expiry, the transient pool's commit, and the stats windows.
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


async def stats_loop(app: BrokerContext) -> None:
    """Roll the broker's moving windows (`BrokerStats.roll`, every 5 s) and sample the store's
    counters (every second), so TPS figures are over fixed windows, not "since whoever asked last".
    """
    from orbitmq.broker.stats import ROLL_SECONDS

    ticks = 0
    per_roll = max(int(ROLL_SECONDS), 1)
    while True:
        await asyncio.sleep(1.0)
        ticks += 1
        try:
            app.store.stats.sample()
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
