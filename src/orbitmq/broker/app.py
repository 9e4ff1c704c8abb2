"""BrokerApp: the broker's composition root (RocketMQ's BrokerController): server, store, tables,
services. `start()` binds the port first, then opens the store with the real `brokerIP1:port` as store
host, loads the config files, starts the services and registers; `stop()` loses nothing: held pulls
answered, accepting stopped, services awaited, unregistered, tables persisted, store shut down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from orbitmq.acl import PlainAccessValidator
from orbitmq.broker.client_registry import ClientChannelInfo, ConsumerRegistry, ProducerRegistry
from orbitmq.broker.config import BrokerConfig, check_minimums, parse_delay_levels
from orbitmq.broker.config_writer import ConfigWriter
from orbitmq.broker.consumer_offsets import ConsumerOffsetManager
from orbitmq.broker.locks import RebalanceLockManager
from orbitmq.broker.long_polling import PullRequestHoldService
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.subscription_groups import SubscriptionGroupManager
from orbitmq.broker.topics import TopicConfig, TopicConfigManager
from orbitmq.broker.transaction import processor as end_transaction
from orbitmq.broker.transaction.check import TransactionalMessageCheckService
from orbitmq.broker.transaction.service import TransactionalMessageService, TransactionConfig
from orbitmq.common import malloc_tuning
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.controller.codes import GET_BROKER_EPOCH_CACHE
from orbitmq.message.hashing import set_tags_code_cache_max
from orbitmq.message.record_layout import set_tail_cache_max
from orbitmq.message.validation import set_valid_names_max
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.name_guard import guard_names
from orbitmq.store.config import StoreConfig
from orbitmq.store.message_store import MessageStore
from orbitmq.store.recovery_progress import RecoveryProgress
from orbitmq.transport.client import RemotingClient
from orbitmq.transport.connection import Connection
from orbitmq.transport.limits import server_limits
from orbitmq.transport.server import RemotingServer
from orbitmq.transport.signing import request_signer
from orbitmq.transport.tls import TlsClientSettings, TlsServerSettings

log = logging.getLogger("orbitmq.broker")
BROKER_VERSION_DESC = "V4_9_7"


class BrokerApp:
    def __init__(self, config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        # Set before start() to watch store recovery (a progress bar); None logs every 10 % / 5 s.
        self.recovery_progress: RecoveryProgress | None = None
        self.config = config
        self.clock = clock
        self.delay_levels_ms = parse_delay_levels(config.message_delay_level)
        self.topics = TopicConfigManager(config, clock=clock)
        self.subscription_groups = SubscriptionGroupManager(
            config.config_dir, auto_create=config.auto_create_subscription_group, clock=clock
        )
        self.offsets = ConsumerOffsetManager(config.config_dir)
        # Config files are rewritten on this thread, never on the event loop (see config_writer).
        self.config_writer = ConfigWriter(f"config-writer-{config.broker_name}")
        self.topics.writer = self.config_writer
        self.subscription_groups.writer = self.config_writer
        self.offsets.writer = self.config_writer
        self.producers = ProducerRegistry()
        self.consumers = ConsumerRegistry(self._consumer_ids_changed)
        self.stats = BrokerStats(clock)
        self.locks = RebalanceLockManager(max_live_ms=config.rebalance_lock_max_live_time, clock=clock)
        check_minimums(config)
        self.server = RemotingServer(
            config.broker_ip1,
            config.listen_port,
            name=f"broker {config.broker_name}",
            clock=clock,
            tls=TlsServerSettings.from_properties(config.extra),
            limits=server_limits(config),
            processor_wrapper=guard_names,
            busy_poll_micros=config.server_busy_poll_micros,
            idle_timeout=float(idle) if (idle := config.server_channel_max_idle_time_seconds) > 0 else None,
        )
        self.outbound = RemotingClient(
            name=f"broker {config.broker_name} outbound",
            clock=clock,
            rpc_hook=request_signer(config.access_key, config.secret_key),
            ssl_context=TlsClientSettings.from_properties(config.extra).context(),
        )
        # plain_acl.yml rules when aclEnable=true (loaded in start()); None otherwise.
        self.acl: PlainAccessValidator | None = None
        self._store: MessageStore | None = None
        self.hold: PullRequestHoldService | None = None
        self.started_ms = 0
        self.stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._side_tasks: set[asyncio.Task[Any]] = set()
        # Late imports keep the services' modules (and their imports) out of this module's namespace.
        from orbitmq.broker.services.registration import RegistrationService
        from orbitmq.broker.services.replication import ReplicationService
        from orbitmq.broker.services.schedule import ScheduleMessageService
        from orbitmq.broker.services.timer import TimerMessageService

        self.registration = RegistrationService(self)
        self.replication = ReplicationService(self)
        self._transactions: TransactionalMessageService | None = None
        self.schedule = ScheduleMessageService(self)
        self.timers = TimerMessageService(self)

    # ------------------------------------------------------------------------------------ address
    @property
    def port(self) -> int:
        return self.server.port

    @property
    def broker_addr(self) -> str:
        return f"{self.config.broker_ip1}:{self.server.port}"

    @property
    def ha_server_addr(self) -> str:
        port = self.replication.ha_port
        return f"{self.config.broker_ip2}:{port if port is not None else self.server.port + 1}"

    @property
    def ha_listen_addr(self) -> str | None:
        """Where the HA listener is bound (masters only)."""
        port = self.replication.ha_port
        return None if port is None else f"{self.config.broker_ip1}:{port}"

    @property
    def transactions(self) -> TransactionalMessageService:
        if self._transactions is None:
            raise RuntimeError("the broker is not started")
        return self._transactions

    def _producer_channels(self, group: str) -> list[object]:
        return [info.channel for info in self.producers.groups.get(group, {}).values()]

    @property
    def store(self) -> MessageStore:
        if self._store is None:
            raise RuntimeError("the broker is not started")
        return self._store

    # ---------------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        from orbitmq.broker.processors import (
            acl,
            admin,
            admin_stats,
            admin_tools,
            client,
            locks,
            offsets,
            pull,
            query,
            reply,
            send,
            send_recall,
        )

        for module in (
            send,
            pull,
            offsets,
            client,
            locks,
            query,
            admin,
            reply,
            admin_tools,
            admin_stats,
            acl,
            send_recall,
        ):
            module.register(self.server, self)
        if self.config.enable_controller_mode:  # mqadmin getBrokerEpoch
            self.server.register(GET_BROKER_EPOCH_CACHE, self.replication.epoch_cache)
        if self.config.acl_enable:
            self.acl = PlainAccessValidator(self.config.acl_file)
            acl.install_hook(self.server, self.acl)
        self.server.add_connection_listener(on_close=self._connection_closed)
        await self.server.start()
        # Everything below runs before the loop gets a chance to dispatch a request to the new server.
        store_props = self.config.store_properties()
        store_props["haListenPort"] = str(self.server.port + 1)
        store_config = StoreConfig.from_properties(store_props)
        set_tail_cache_max(self.config.record_tail_cache_max_entries)  # process-wide, before recovery
        set_tags_code_cache_max(self.config.tags_code_cache_max_entries)  # process-wide
        set_valid_names_max(self.config.valid_name_cache_max_entries)  # process-wide
        malloc_tuning.tune_malloc(self.config.malloc_mmap_threshold, self.config.malloc_trim_threshold)
        self._store = MessageStore(
            store_config,
            clock=self.clock,
            store_host=(self.config.broker_ip1, self.port),
            recovery_progress=self.recovery_progress,
        )
        if self._store.key_index is not None:  # before recovery, which re-indexes
            self._store.key_index.prefix_cache_max = self.config.index_topic_prefix_cache_max_entries
        try:
            self._store.load()
            close_progress = getattr(self.recovery_progress, "close", None)  # e.g. a terminal bar
            if callable(close_progress):
                close_progress()
            self.topics.load()
            self.subscription_groups.load()
            self.offsets.load()
            self.schedule.load()
            self.timers.load()
            self._store.start()
        except BaseException:
            await self.server.stop()
            raise
        self.hold = PullRequestHoldService(
            self._wake_held_pull,
            self._store.get_max_offset_in_queue,
            check_interval=5.0
            if self.config.long_polling_enable
            else self.config.short_polling_time_mills / 1000,
            clock=self.clock,
        )
        # The service itself listens (compiled, it returns at once while no pull is held).
        self._store.add_arrival_listener(self.hold.notify_message_arriving)
        # Key-index entries are written in batches, at most `indexDeferMillis` after the first one was
        # deferred (or at `indexDeferMaxEntries`): a timer, not call_soon, so a lone sender's put costs
        # no extra loop turn. Queries, batches, truncation and shutdown write pending entries first; a
        # crash loses only what recovery re-indexes from the log.
        loop = asyncio.get_running_loop()
        delay = self.config.index_defer_millis / 1000
        self._store.dispatcher.index_pending_max = self.config.index_defer_max_entries
        self._store.defer_index_to(lambda flush: loop.call_later(delay, flush))
        # A plain send is answered before its consume-queue entry is written: each connection calls
        # dispatch_deferred at the end of each turn of received requests, before anything else runs. In a
        # turn of sendGatherMinRequests or more, the sends' records are written together: each connection
        # calls write_pending before any bytes leave it, so no answer precedes its record.
        self.server.before_write = self._store.write_pending
        self.server.after_turn = self._store.dispatch_deferred
        self._store.gather_writes_between_answers()
        c = self.config
        tx_config = TransactionConfig(
            check_interval_ms=c.transaction_check_interval,
            timeout_ms=c.transaction_time_out,
            check_max=c.transaction_check_max,
            file_reserved_hours=c.file_reserved_time,
        )
        self._transactions = TransactionalMessageService(
            self._store, self.topics, self.offsets, config=tx_config, clock=self.clock
        )
        end_transaction.register(self.server, self._transactions, is_slave=lambda: self.config.is_slave)
        try:
            await self.replication.start()
        except BaseException:
            await self.server.stop()
            self._store.shutdown()
            self._store = None
            raise
        self.topics.add_created_listener(self._topic_created)
        self.started_ms = self.clock.now_ms()
        from orbitmq.broker.services.housekeeping import (
            client_housekeeping_loop,
            commit_loop,
            persist_loop,
            retention_loop,
            stats_loop,
        )

        self._spawn(self.hold.run(), "long polling")
        self._spawn(persist_loop(self), "persist")
        self._spawn(retention_loop(self), "retention")
        self._spawn(stats_loop(self), "stats")
        self._spawn(client_housekeeping_loop(self), "client housekeeping")
        if self._store.transient_store_pool_active:
            self._spawn(commit_loop(self), "commit")
        if self.config.is_slave:
            self._spawn(self.replication.slave_sync_loop(), "slave sync")
        else:
            self.start_master_services()
        await self.registration.register_all(timeout=3.0)
        self._spawn(self.registration.run(), "registration")
        log.info(
            "broker %s started on %s (store %s)",
            self.config.broker_name,
            self.broker_addr,
            self.config.store_path_root_dir,
        )

    def start_master_services(self) -> None:
        """The delay-level schedule and the transaction check: a master's (a promoted slave's too)."""
        self._spawn(self.schedule.run(), "schedule")
        self._spawn(self.timers.run(), "timer wheel")
        check = TransactionalMessageCheckService(self.transactions, self._producer_channels)
        self._spawn(check.run(), "transaction check")

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(self._guard(coro, name), name=f"broker {name}")
        self._tasks.append(task)

    async def _guard(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("broker service %s died", name)

    def spawn_side_task(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Fire-and-forget work (notifications, re-registration); kept referenced until done."""
        task = asyncio.get_running_loop().create_task(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    async def config_durable(self) -> None:
        """Wait until every config change made so far is on disk (raises if its write failed)."""
        durable = self.config_writer.durable()
        if durable.done():
            durable.result()  # raises if the batch holding the change failed
        else:
            await asyncio.wrap_future(durable)

    async def stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        if self.hold is not None:
            self.hold.stop()  # answers every held pull before the connections go
            if self._side_tasks:
                await asyncio.wait(list(self._side_tasks), timeout=2.0)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self._store is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.registration.unregister_all(), 3.0)
        await self.server.stop()
        await self.replication.stop()
        for task in list(self._side_tasks):
            task.cancel()
        if self._side_tasks:
            await asyncio.gather(*self._side_tasks, return_exceptions=True)
        await self.outbound.close()
        # Drain the queued writes; the final persists below then write synchronously.
        await asyncio.get_running_loop().run_in_executor(None, self.config_writer.close)
        if self._store is not None:
            for persist in (
                self.offsets.persist,
                self.topics.persist,
                self.subscription_groups.persist,
                self.schedule.persist,
                self.timers.close,
            ):
                try:
                    persist()
                except Exception:
                    log.exception("persisting broker state at shutdown failed")
            self._store.shutdown()
            self._store = None
        log.info("broker %s stopped", self.config.broker_name)

    # ---------------------------------------------------------------------------------- callbacks
    def _wake_held_pull(self, held: Any) -> None:
        from orbitmq.broker.processors.pull import answer_held_pull

        held.conn.inflight -= 1  # counted when held (serverMaxInflightPerConnection)
        self.spawn_side_task(answer_held_pull(self, held))

    def _topic_created(self, tc: TopicConfig) -> None:
        if self._store is not None and not self.stopping:
            self.spawn_side_task(self.registration.register_topics([tc], timeout=3.0))

    def _connection_closed(self, conn: Connection) -> None:
        self.producers.channel_closed(conn)
        self.consumers.channel_closed(conn, self.notify_enabled)

    def notify_enabled(self, group: str) -> bool:
        if not self.config.notify_consumer_ids_changed_enable:
            return False
        cfg = self.subscription_groups.table.get(group)
        return cfg is None or cfg.notify_consumer_ids_changed_enable

    def _consumer_ids_changed(self, group: str, members: list[ClientChannelInfo]) -> None:
        if self.stopping:
            return
        for info in members:
            conn = info.channel
            if isinstance(conn, Connection) and not conn.closed:
                request = RemotingCommand.request(
                    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}, oneway=True
                )
                self.spawn_side_task(self._notify_one(conn, request))

    @staticmethod
    async def _notify_one(conn: Connection, request: RemotingCommand) -> None:
        with contextlib.suppress(Exception):
            await conn.invoke_oneway(request)
