"""ReplicationService: the broker's side of master/slave replication (RocketMQ's HAService wiring plus
SlaveSynchronize); the HA frames and streams themselves are in orbitmq.replication.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from orbitmq.broker.config_files import load_json
from orbitmq.broker.topics import TopicConfig
from orbitmq.protocol.bodies import SubscriptionGroupConfig
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.replication.master import HAService
from orbitmq.replication.slave import HAClient

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.broker.services.controller_mode import ControllerMode
    from orbitmq.store import MessageStore

log = logging.getLogger("orbitmq.broker")

SLAVE_SYNC_INTERVAL = 10.0
SLAVE_SYNC_FIRST = 3.0


class ReplicationService:
    """Both roles' sides of replication, chosen by brokerRole:

    - A master listens on the HA port (listenPort + 1, or a free port when listenPort is 0) with the
      replication layer's HAService, wakes its streams after every append (a store arrival listener, hung
      only while a slave is connected), and for SYNC_MASTER sends waits until a slave acknowledged the
      message (`wait_replicated`).
    - A slave learns the master's HA address and broker address from its REGISTER_BROKER response
      (`haServerAddr`, `masterAddr`), replicates the commit log with HAClient (the store dispatches what it
      appends, so long polling on the slave wakes too) and copies the master's topics, consumer offsets,
      delay offsets and subscription groups every 10 s (first after 3 s), as SlaveSynchronize does.
    """

    def __init__(self, app: BrokerContext) -> None:
        self.app = app
        self.ha: HAService | None = None
        self.client: HAClient | None = None
        self.master_addr: str | None = None
        # Controller mode (enableControllerMode): the controller decides the role; see controller_mode.
        self.controller: ControllerMode | None = None
        self._controller_task: asyncio.Task[None] | None = None
        self._sync_task: asyncio.Task[None] | None = None  # a master's, idle until it steps down
        self._expected_master: str | None = None

    def epoch_cache(self, conn: object, request: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_EPOCH_CACHE (mqadmin getBrokerEpoch): the controller mode's epochs."""
        if self.controller is None:
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, "the broker is not in controller mode")
        return RemotingCommand.response(ResponseCode.SUCCESS, None, None, self.controller.epoch_cache())

    @property
    def ha_port(self) -> int | None:
        return self.ha.port if self.ha is not None else None

    async def start(self) -> None:
        app = self.app
        if app.config.enable_controller_mode:
            from orbitmq.broker.services.controller_mode import ControllerMode

            self.controller = ControllerMode(app, self)
            await self.controller.start()  # sets brokerRole and brokerId from the controller
            self._expected_master = self.controller.master_address or None
        if app.config.is_slave:
            await self._start_slave()
        else:
            await self._start_master()
        if self.controller is not None:
            loop = asyncio.get_running_loop()
            self._controller_task = loop.create_task(self.controller.run(), name="controller mode")
            if not app.config.is_slave:  # (the broker runs a slave's sync loop itself)
                self._sync_task = loop.create_task(self.slave_sync_loop(), name="slave sync")

    async def _start_slave(self) -> None:
        c = self.app.store.config
        self.client = HAClient(
            self.app.store,
            master_address=c.ha_master_address,
            heartbeat_interval=c.ha_send_heartbeat_interval / 1000,
            housekeeping_interval=c.ha_housekeeping_interval / 1000,
            broker_id=self.controller.broker_id if self.controller is not None else None,
            on_master_epochs=self.controller.agree_with_master if self.controller is not None else None,
        )
        await self.client.start()

    async def _start_master(self) -> None:
        app = self.app
        store = app.store
        port = app.port + 1 if app.config.listen_port != 0 else 0
        c = store.config
        self.ha = HAService(
            store,
            file_size=c.mapped_file_size_commit_log,
            host=app.config.broker_ip1,
            port=port,
            transfer_batch_size=c.ha_transfer_batch_size,
            heartbeat_interval=c.ha_send_heartbeat_interval / 1000,
            housekeeping_interval=c.ha_housekeeping_interval / 1000,
            slave_fall_behind_max=c.ha_slave_fallbehind_max,
            max_connections=c.ha_max_connections,
            identify_slaves=self.controller is not None,
            epochs=self._epoch_entries if self.controller is not None else None,
        )
        try:
            await self.ha.start()
        except OSError as exc:
            # Serving clients matters more than replication: run without an HA listener.
            log.warning("cannot listen on HA port %s (%s); running without replication", port, exc)
            self.ha = None
            return
        wake_streams_on_arrival(store, self.ha)

    def _epoch_entries(self) -> list[tuple[int, int]]:
        return list(self.controller.epochs.entries) if self.controller is not None else []

    async def become_master(self) -> None:
        """Controller mode, promoted: stop copying the old master's log and serve slaves instead."""
        if self.client is not None:
            await self.client.stop()
            self.client = None
        self.master_addr = None
        self._expected_master = None
        if self.ha is None:
            await self._start_master()

    async def become_slave(self, master_address: str) -> None:
        """Controller mode, no longer master: stop serving slaves and follow `master_address`."""
        if self.ha is not None:
            await self.ha.stop()
            self.ha = None
        self.master_addr = None
        self._expected_master = master_address or None
        if self.client is None:
            await self._start_slave()

    def expect_master(self, master_address: str) -> None:
        """Controller mode: the master the controller names; the nameserver's answers must agree (until
        they do the slave is `awaiting_master`, and registers again at every heartbeat)."""
        if master_address and master_address != self._expected_master:
            self._expected_master = master_address
            self.master_addr = None  # registration asks the nameserver again every second

    async def stop(self) -> None:
        for task in (self._controller_task, self._sync_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._controller_task = self._sync_task = None
        if self.client is not None:
            await self.client.stop()
            self.client = None
        if self.ha is not None:
            await self.ha.stop()
            self.ha = None

    # -------------------------------------------------------------------------------- master side
    async def wait_replicated(self, end_offset: int) -> int:
        """SYNC_MASTER: SUCCESS once a slave has `end_offset`; else SLAVE_NOT_AVAILABLE or
        FLUSH_SLAVE_TIMEOUT (the message is stored either way). In controller mode with
        allAckInSyncStateSet, every other replica of the SyncStateSet must have it, and the set must hold
        at least minInSyncReplicas."""
        if self.controller is not None:
            if len(self.controller.sync_state_set) < self.app.config.min_in_sync_replicas:
                return ResponseCode.SLAVE_NOT_AVAILABLE
            if self.ha is None:
                return ResponseCode.SLAVE_NOT_AVAILABLE
            self.ha.notify_new_data()
            ok = await self.ha.wait_for_replication(end_offset, self.app.store.config.slave_timeout / 1000)
            return ResponseCode.SUCCESS if ok else ResponseCode.FLUSH_SLAVE_TIMEOUT
        ha = self.ha
        if ha is None or not ha.is_slave_ok(end_offset):
            return ResponseCode.SLAVE_NOT_AVAILABLE
        ha.notify_new_data()
        timeout = self.app.store.config.slave_timeout / 1000
        if await ha.wait_for_replication(end_offset, timeout):
            return ResponseCode.SUCCESS
        return ResponseCode.FLUSH_SLAVE_TIMEOUT

    # --------------------------------------------------------------------------------- slave side
    @property
    def awaiting_master(self) -> bool:
        """A slave that has not learned its master yet (it registered before the master did)."""
        return self.client is not None and self.master_addr is None

    def on_registered(self, response: RemotingCommand) -> None:
        """A REGISTER_BROKER answer: a slave learns where its master (and the master's HA port) is."""
        if self.client is None:
            return
        ha_addr = response.ext_fields.get("haServerAddr")
        master_addr = response.ext_fields.get("masterAddr")
        if self.controller is not None and master_addr != self._expected_master:
            return  # the nameserver still knows the old master: ask again next second
        if ha_addr:
            self.client.update_master_address(ha_addr)
        if master_addr and master_addr != self.master_addr:
            log.info("slave %s: master is %s (HA %s)", self.app.config.broker_name, master_addr, ha_addr)
            self.master_addr = master_addr

    async def slave_sync_loop(self) -> None:
        await asyncio.sleep(SLAVE_SYNC_FIRST)
        while True:
            if self.master_addr:
                try:
                    await self.sync_from_master(self.master_addr)
                except Exception as exc:
                    log.warning("slave sync from %s failed: %s", self.master_addr, exc)
            await asyncio.sleep(SLAVE_SYNC_INTERVAL)

    async def _fetch(self, addr: str, code: int) -> Any:
        response = await self.app.outbound.invoke(addr, RemotingCommand.request(code), 5.0)
        if response.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"request {code} to master {addr}: {response.code} {response.remark}")
        return load_json(response.body_bytes())

    async def sync_from_master(self, addr: str) -> None:
        app = self.app
        topics = await self._fetch(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        table = topics.get("topicConfigTable") or {}
        for raw in table.values():
            with contextlib.suppress(KeyError, TypeError, ValueError):
                tc = TopicConfig.from_json_dict(raw)
                app.topics.table[tc.topic_name] = tc
        for name in [n for n in app.topics.table if n not in table and not app.topics.is_system_topic(n)]:
            del app.topics.table[name]
        app.topics.persist()
        offsets = await self._fetch(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        for key, queues in (offsets.get("offsetTable") or {}).items():
            with contextlib.suppress(TypeError, ValueError, AttributeError):
                app.offsets.table[str(key)] = {int(q): int(o) for q, o in queues.items()}
        app.offsets.persist()
        delay = await self._fetch(addr, RequestCode.GET_ALL_DELAY_OFFSET)
        for level, offset in (delay.get("offsetTable") or {}).items():
            with contextlib.suppress(TypeError, ValueError):
                app.schedule.offsets[int(level)] = int(offset)
        app.schedule.persist()
        groups = await self._fetch(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        for raw in (groups.get("subscriptionGroupTable") or {}).values():
            with contextlib.suppress(TypeError, ValueError, AttributeError):
                cfg = SubscriptionGroupConfig.from_any(raw)
                app.subscription_groups.table[cfg.group_name] = cfg
        app.subscription_groups.persist()


def wake_streams_on_arrival(store: MessageStore, ha: HAService) -> None:
    """Hang `ha.notify_arrival` on the store's arrivals while a slave is connected, and only then:
    without a slave nobody waits for new data, and a put pays no listener call."""

    def follow_slaves(connected: bool) -> None:
        if connected:
            store.add_arrival_listener(ha.notify_arrival)
        else:
            store.remove_arrival_listener(ha.notify_arrival)

    ha.slaves_listener = follow_slaves
