"""ControllerMode: a broker with enableControllerMode=true takes its id and role from the controller.

At start it applies for an id (kept in `brokerIdentity.json` beside the store, so a restart keeps it),
registers, and asks for an election when its group has no master. Then, every brokerHeartbeatInterval, it
heartbeats every controller, reads its group's replica info from the leader (or is told at once by
NOTIFY_BROKER_ROLE_CHANGED) and follows it: promoted, it becomes the master (brokerId 0 at the
nameserver) and records the new epoch; as master it reports who is in sync (ALTER_SYNC_STATE_SET).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import orjson

from orbitmq.controller import codes
from orbitmq.controller.state import MASTER_STILL_EXIST, NO_MASTER, NOT_LEADER, SUCCESS
from orbitmq.protocol.command import RemotingCommand
from orbitmq.replication.epoch_file import FILE_NAME, EpochFile, agree_with_master

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.replication.master import HAService
    from orbitmq.transport.connection import Connection

log = logging.getLogger("orbitmq.broker")

CONTROLLER_TIMEOUT = 3.0
# How long a starting broker waits for a controller leader (a Raft group elects one within seconds).
START_RETRY_SECONDS = 30.0


class ControllerUnavailable(RuntimeError):
    """No controller answered as the leader."""


class Replication(Protocol):
    """What controller mode drives of the broker's replication (services/replication.py)."""

    @property
    def ha(self) -> HAService | None: ...

    @property
    def awaiting_master(self) -> bool: ...

    async def become_master(self) -> None: ...

    async def become_slave(self, master_address: str) -> None: ...

    def expect_master(self, master_address: str) -> None: ...


class ControllerMode:
    def __init__(self, app: BrokerContext, replication: Replication) -> None:
        self.app = app
        self.replication = replication
        c = app.config
        self.addresses = [a.strip() for a in c.controller_addr.split(";") if a.strip()]
        if not self.addresses:
            raise ValueError("enableControllerMode=true needs controllerAddr")
        if c.broker_id != 0 or c.broker_role != "ASYNC_MASTER":
            log.warning(
                "controller mode: brokerId=%s and brokerRole=%s are ignored (the controller assigns them)",
                c.broker_id,
                c.broker_role,
            )
        root = Path(c.store_path_root_dir)
        root.mkdir(parents=True, exist_ok=True)
        self._identity = root / "brokerIdentity.json"
        self.epochs = EpochFile(root / FILE_NAME)
        self.broker_id = 0
        self.master_id = NO_MASTER
        self.master_epoch = 0
        self.master_address = ""
        self.sync_state_set: frozenset[int] = frozenset()
        self.sync_state_set_epoch = 0
        self._leader: str | None = None
        self._wake = asyncio.Event()
        self._last_check = 0.0
        self._became_master_at = 0.0
        self.is_master = False
        app.outbound.register(codes.NOTIFY_BROKER_ROLE_CHANGED, self.on_role_changed)
        self._master_services = False  # the schedule and transaction check run once started
        self._fenced = False  # a master that cannot hear the controller refuses writes (`_fence`)
        # When the last heartbeat the leader answered was sent: the leader cannot have heard from us later
        # than that, so it elects no one before it plus controllerHeartBeatTimeoutMills (`_lease_check`).
        self._heard = 0.0
        self._lease_timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------------------- controllers
    async def call(self, code: int, fields: dict[str, str], body: bytes = b"") -> RemotingCommand:
        """Send to the leader: the last one known first, then every address until one answers."""
        order = [self._leader] if self._leader else []
        order += [a for a in self.addresses if a != self._leader]
        last = "no controller answered"
        for addr in order:
            assert addr is not None
            try:
                response = await self.app.outbound.invoke(
                    addr, RemotingCommand.request(code, fields, body), CONTROLLER_TIMEOUT
                )
            except Exception as exc:
                last = f"{addr}: {exc}"
                continue
            if response.code == NOT_LEADER:
                last = f"{addr}: {response.remark}"
                continue
            self._leader = addr
            return response
        self._leader = None
        raise ControllerUnavailable(last)

    def _group(self) -> dict[str, str]:
        c = self.app.config
        return {"clusterName": c.broker_cluster_name, "brokerName": c.broker_name}

    async def _apply_id(self) -> int:
        """The id kept beside the store, else the next free one the controller grants us."""
        if self._identity.exists():
            saved = json.loads(self._identity.read_text(encoding="utf-8"))
            if saved.get("brokerName") == self.app.config.broker_name:
                return int(saved["brokerId"])
        for _ in range(10):
            answer = await self.call(codes.CONTROLLER_GET_NEXT_BROKER_ID, self._group())
            broker_id = int(answer.ext_fields["nextBrokerId"])
            check = f"{self.app.broker_addr};{self.app.clock.now_ms()}"
            fields = {**self._group(), "appliedBrokerId": str(broker_id), "registerCheckCode": check}
            applied = await self.call(codes.CONTROLLER_APPLY_BROKER_ID, fields)
            if applied.code == SUCCESS:
                tmp = self._identity.with_name(self._identity.name + ".tmp")
                tmp.write_text(json.dumps({**self._group(), "brokerId": broker_id}), encoding="utf-8")
                tmp.replace(self._identity)
                return broker_id
        raise ControllerUnavailable("could not apply for a broker id (taken ten times)")

    async def start(self) -> None:
        """Before replication starts: learn our id and role (the config's role and id are set from it).
        Controllers starting beside us may still be electing their leader: retry for a while."""
        deadline = asyncio.get_running_loop().time() + START_RETRY_SECONDS
        while True:
            try:
                await self._register()
                return
            except ControllerUnavailable as exc:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                log.info("controller mode: %s; retrying", exc)
                await asyncio.sleep(1.0)

    async def _register(self) -> None:
        self.broker_id = await self._apply_id()
        fields = {**self._group(), "brokerId": str(self.broker_id), "brokerAddress": self.app.broker_addr}
        answer = await self.call(codes.CONTROLLER_REGISTER_BROKER, fields)
        if answer.code != SUCCESS:
            raise ControllerUnavailable(f"controller refused registration: {answer.code} {answer.remark}")
        await self.heartbeat()
        if int(answer.ext_fields.get("masterBrokerId", NO_MASTER)) == NO_MASTER:
            answer = await self._ask_election() or answer
        self._take(answer)
        if self.master_id == self.broker_id:
            self._set_role(master=True)
            self._master_services = True  # the broker starts them for a master
            self.is_master = True
            self._became_master_at = asyncio.get_running_loop().time()  # slaves get time to reconnect
            self._record_epoch()
        else:
            self._set_role(master=False)
        log.info(
            "controller mode: broker %s id %s is %s (master %s, epoch %s)",
            self.app.config.broker_name,
            self.broker_id,
            "master" if self.is_master else "slave",
            self.master_id,
            self.master_epoch,
        )

    async def _ask_election(self) -> RemotingCommand | None:
        fields = {**self._group(), "brokerId": str(self.broker_id), "designateElect": "false"}
        answer = await self.call(codes.CONTROLLER_ELECT_MASTER, fields)
        return answer if answer.code in (SUCCESS, MASTER_STILL_EXIST) else None

    def _take(self, answer: RemotingCommand) -> None:
        f = answer.ext_fields
        self.master_id = int(f.get("masterBrokerId", NO_MASTER))
        self.master_epoch = int(f.get("masterEpoch", 0))
        self.master_address = f.get("masterAddress", "")
        with contextlib.suppress(ValueError, TypeError, KeyError):
            body = orjson.loads(answer.body_bytes())
            self.sync_state_set = frozenset(int(i) for i in body["syncStateSet"])
            self.sync_state_set_epoch = int(body["syncStateSetEpoch"])

    def _set_role(self, *, master: bool) -> None:
        c = self.app.config
        role = ("SYNC_MASTER" if c.all_ack_in_sync_state_set else "ASYNC_MASTER") if master else "SLAVE"
        c.broker_role = role
        c.broker_id = 0 if master else self.broker_id  # the nameserver knows a master as id 0
        with contextlib.suppress(RuntimeError):  # before the store opens, StoreConfig reads broker_role
            self.app.store.config.broker_role = role

    def _record_epoch(self) -> None:
        """A new master's epoch starts at the end of its log (after any partial record a slave copied)."""
        store = self.app.store
        reput = store.dispatcher.reput_offset
        if store.get_max_phy_offset() > reput:
            log.warning("new master: cutting the partial record at %d..%d", reput, store.get_max_phy_offset())
            store.truncate_commit_log(reput)
        self.epochs.append(self.master_epoch, store.get_max_phy_offset())

    def agree_with_master(self, entries: list[tuple[int, int]], master_max: int) -> None:
        """The HA handshake's epochs: cut what this replica wrote past its last epoch with the master."""
        end = self.app.store.get_max_phy_offset()
        cut = agree_with_master(self.app.store, self.epochs, entries, master_max)
        if cut is not None:
            log.warning(
                "controller mode: %s id %s cut its log at %d (was %d): past its last epoch with the master",
                self._name,
                self.broker_id,
                cut,
                end,
            )

    def epoch_cache(self) -> bytes:
        """EpochEntryCache: each epoch from its start to the next one's (the last to the log's end)."""
        entries = self.epochs.entries
        end = self.app.store.get_max_phy_offset()
        ends = [start for _, start in entries[1:]] + [end]
        epochs = [
            {"epoch": e, "startOffset": start, "endOffset": stop}
            for (e, start), stop in zip(entries, ends, strict=True)
        ]
        return orjson.dumps(
            {**self._group(), "brokerId": self.broker_id, "epochList": epochs, "maxOffset": end}
        )

    # ---------------------------------------------------------------------------------- the loop
    async def heartbeat(self) -> None:
        c = self.app.config
        fields = {
            **self._group(),
            "brokerAddr": self.app.broker_addr,
            "brokerId": str(self.broker_id),
            "epoch": str(self.master_epoch),
            "heartbeatTimeoutMills": str(c.controller_heart_beat_timeout_mills),
            "electionPriority": str(c.broker_election_priority),
        }
        with contextlib.suppress(RuntimeError):
            fields["maxOffset"] = str(self.app.store.get_max_phy_offset())
            fields["confirmOffset"] = fields["maxOffset"]

        loop = asyncio.get_running_loop()
        sent = loop.time()

        async def one(addr: str) -> None:
            with contextlib.suppress(Exception):
                answer = await self.app.outbound.invoke(
                    addr, RemotingCommand.request(codes.BROKER_HEARTBEAT, fields), CONTROLLER_TIMEOUT
                )
                if answer.code == SUCCESS and (addr == self._leader or len(self.addresses) == 1):
                    self._renew_lease(sent)

        await asyncio.gather(*(one(a) for a in self.addresses))

    @property
    def _lease(self) -> float:
        """How long after an answered heartbeat was sent a master may keep writing: the controller's
        heartbeat timeout less a margin (a quarter, at most a second) for the scan and clock rates."""
        timeout = self.app.config.controller_heart_beat_timeout_mills / 1000
        return timeout - min(1.0, timeout / 4)

    def _renew_lease(self, sent: float) -> None:
        if sent <= self._heard:
            return
        self._heard = sent
        if self._lease_timer is not None:
            self._lease_timer.cancel()
        self._lease_timer = asyncio.get_running_loop().call_at(sent + self._lease, self._lease_check)

    def _lease_check(self) -> None:
        """The lease ran out: the controller may elect another master any moment, so stop writing now
        (not when the next controller call times out)."""
        self._lease_timer = None
        if asyncio.get_running_loop().time() >= self._heard + self._lease:
            self._fence(True)

    def on_role_changed(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """NOTIFY_BROKER_ROLE_CHANGED: re-read the replica info now rather than at the next beat."""
        self._wake.set()
        return RemotingCommand.response(SUCCESS)  # (a oneway request's answer is never sent)

    async def run(self) -> None:
        """Heartbeats at a steady rate on their own task (a slow controller call must not delay them
        and get us taken for dead); replica info every beat, or at once when the controller says."""
        beats = asyncio.get_running_loop().create_task(self._beat_loop(), name="controller heartbeat")
        try:
            await self._follow_loop()
        finally:
            beats.cancel()
            if self._lease_timer is not None:
                self._lease_timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beats

    async def _beat_loop(self) -> None:
        interval = self.app.config.broker_heartbeat_interval / 1000
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await self.heartbeat()
            await asyncio.sleep(max(0.0, interval - (loop.time() - started)))

    async def _follow_loop(self) -> None:
        interval = self.app.config.broker_heartbeat_interval / 1000
        loop = asyncio.get_running_loop()
        confirmed = loop.time()
        while True:
            try:
                answer = await self.call(codes.CONTROLLER_GET_REPLICA_INFO, self._group())
                if answer.code == SUCCESS:
                    confirmed = loop.time()
                    await self._follow(answer)
                    if loop.time() < self._heard + self._lease:
                        self._fence(False)
                if self.is_master:
                    await self._check_sync_state_set()
            except ControllerUnavailable as exc:
                log.info("controller mode: %s", exc)
            # A master that cannot hear the controller for as long as the controller waits for its
            # heartbeats may have been replaced: it takes no writes until the controller confirms it.
            if loop.time() - confirmed > self.app.config.controller_heart_beat_timeout_mills / 1000:
                self._fence(True)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._wake.wait()

    def _fence(self, fenced: bool) -> None:
        """Refuse (or take again) writes at the store while the controller cannot confirm us as master."""
        if fenced == self._fenced or (fenced and not self.is_master):
            return
        self._fenced = fenced
        c = self.app.config
        role = "SLAVE" if fenced or not self.is_master else c.broker_role
        self.app.store.config.broker_role = role
        if fenced:
            log.warning(
                "controller mode: %s id %s cannot reach the controller: writes refused",
                self._name,
                self.broker_id,
            )
        else:
            log.info("controller mode: %s id %s hears the controller again", self._name, self.broker_id)

    async def _follow(self, answer: RemotingCommand) -> None:
        self._take(answer)
        if self.master_id == NO_MASTER:
            if self.is_master:  # the controller took our role away: stop taking writes
                await self._demote()
            elif (elected := await self._ask_election()) is not None:
                self._take(elected)
        if self.master_id == self.broker_id and not self.is_master:
            log.info(
                "controller mode: broker %s id %s promoted (epoch %s)",
                self._name,
                self.broker_id,
                self.master_epoch,
            )
            self.is_master = True
            self._became_master_at = asyncio.get_running_loop().time()
            await self.replication.become_master()
            self._set_role(master=True)
            self._record_epoch()
            if not self._master_services:
                self._master_services = True
                self.app.start_master_services()
            self._apply_required(self.sync_state_set)
            await self.app.registration.register_all(timeout=3.0)
        elif self.master_id not in (NO_MASTER, self.broker_id) and self.is_master:
            await self._demote()
        elif self.is_master:
            self._apply_required(self.sync_state_set)
        else:
            self.replication.expect_master(self.master_address)
            if self.replication.awaiting_master:  # the nameserver gives the master's HA address
                await self.app.registration.register_all(timeout=3.0)

    @property
    def _name(self) -> str:
        return self.app.config.broker_name

    async def _demote(self) -> None:
        log.warning("controller mode: broker %s id %s is no longer master", self._name, self.broker_id)
        self.is_master = False
        self._set_role(master=False)
        await self.replication.become_slave(self.master_address)
        await self.app.registration.register_all(timeout=3.0)

    def _apply_required(self, members: frozenset[int]) -> None:
        ha = self.replication.ha
        if ha is not None and self.app.config.all_ack_in_sync_state_set:
            ha.set_required(frozenset(members - {self.broker_id}))

    async def _check_sync_state_set(self) -> None:
        """Every checkSyncStateSetPeriod: drop slaves not caught up for haMaxTimeSlaveNotCatchup, add
        those caught up since the last check; tell the controller before relying on a smaller set."""
        c = self.app.config
        ha = self.replication.ha
        now = asyncio.get_running_loop().time()
        if ha is None or now - self._last_check < c.check_sync_state_set_period / 1000:
            return
        self._last_check = now
        limit = c.ha_max_time_slave_not_catchup / 1000
        since = {i: ha.caught_up.get(i, self._became_master_at) for i in self.sync_state_set}
        keep = {i for i, t in since.items() if i == self.broker_id or now - t <= limit}
        join = {i for i, t in ha.caught_up.items() if now - t <= limit}
        wanted = frozenset(keep | join | {self.broker_id})
        if wanted == self.sync_state_set:
            return
        self._apply_required(self.sync_state_set | wanted)  # stricter while the controller decides
        fields = {
            "brokerName": self._name,
            "masterBrokerId": str(self.broker_id),
            "masterEpoch": str(self.master_epoch),
        }
        body = orjson.dumps({"syncStateSet": sorted(wanted), "syncStateSetEpoch": self.sync_state_set_epoch})
        answer = await self.call(codes.CONTROLLER_ALTER_SYNC_STATE_SET, fields, body)
        if answer.code == SUCCESS:
            log.info("controller mode: SyncStateSet of %s is now %s", self._name, sorted(wanted))
            self.sync_state_set = wanted
            self.sync_state_set_epoch = int(answer.ext_fields.get("newSyncStateSetEpoch", 0))
        else:
            log.warning(
                "controller refused SyncStateSet %s: %s %s", sorted(wanted), answer.code, answer.remark
            )
        self._apply_required(self.sync_state_set)
