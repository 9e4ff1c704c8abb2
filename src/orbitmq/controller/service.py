"""ControllerService: RocketMQ 5's controller requests over remoting, and the leader's election scan.

It registers its processors on a RemotingServer it is given: the standalone controller's own, or the
nameserver's when embedded (enableControllerInNamesrv), so a broker's controllerAddr is either. Writes and
reads go to the Raft leader; another controller answers CONTROLLER_NOT_LEADER and the broker tries the
next address. Every controller takes heartbeats, so a new leader knows at once who is alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

import orjson

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.controller import codes
from orbitmq.controller.config import ControllerConfig
from orbitmq.controller.liveness import BrokerLive, Liveness
from orbitmq.controller.replicated import ReplicatedState, open_state
from orbitmq.controller.state import (
    ELECT_MASTER_FAILED,
    INVALID_REQUEST,
    MASTER_STILL_EXIST,
    NO_MASTER,
    NO_PERMISSION,
    NOT_LEADER,
    SUCCESS,
    GroupState,
)
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.properties_text import decode_properties_text
from orbitmq.transport.connection import Connection
from orbitmq.transport.server import RemotingServer

log = logging.getLogger("orbitmq.controller")

# How long a fresh leader waits for heartbeats before it takes a silent master for dead (RocketMQ's
# default controllerHeartBeatTimeoutMills).
STARTUP_GRACE_MS = 10_000


def _int(fields: dict[str, str], name: str, default: int | None = None) -> int:
    raw = fields.get(name)
    if raw is None or raw == "":
        if default is None:
            raise ValueError(f"missing header field {name}")
        return default
    return int(raw)


def _answer(result: dict[str, Any], body: bytes = b"") -> RemotingCommand:
    fields = {
        k: str(v)
        for k, v in result.items()
        if k not in ("code", "remark", "syncStateSet") and v is not None and not isinstance(v, dict)
    }
    return RemotingCommand.response(int(result["code"]), result.get("remark"), fields, body)


def sync_state_set_body(group: GroupState | dict[str, Any]) -> bytes:
    """The SyncStateSet body: `{"syncStateSet":[ids],"syncStateSetEpoch":n}`."""
    if isinstance(group, GroupState):
        return orjson.dumps(
            {"syncStateSet": sorted(group.sync_state_set), "syncStateSetEpoch": group.sync_state_set_epoch}
        )
    return orjson.dumps(
        {"syncStateSet": group.get("syncStateSet", []), "syncStateSetEpoch": group.get("syncStateSetEpoch")}
    )


class ControllerService:
    def __init__(self, config: ControllerConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.liveness = Liveness(clock)
        self.replicated: ReplicatedState | None = None
        self._scan_task: asyncio.Task[None] | None = None
        self._started_ms = 0
        self._electing: set[str] = set()
        self._side_tasks: set[asyncio.Task[None]] = set()
        self.elections = 0

    @property
    def state(self) -> ReplicatedState:
        if self.replicated is None:
            raise RuntimeError("the controller is not started")
        return self.replicated

    def attach(self, server: RemotingServer) -> None:
        """Serve the controller's request codes on `server`."""
        for code, handler in (
            (codes.BROKER_HEARTBEAT, self._heartbeat),
            (codes.CONTROLLER_GET_METADATA_INFO, self._metadata),
            (codes.CONTROLLER_GET_NEXT_BROKER_ID, self._next_broker_id),
            (codes.CONTROLLER_APPLY_BROKER_ID, self._apply_broker_id),
            (codes.CONTROLLER_REGISTER_BROKER, self._register),
            (codes.CONTROLLER_ELECT_MASTER, self._elect),
            (codes.CONTROLLER_ALTER_SYNC_STATE_SET, self._alter),
            (codes.CONTROLLER_GET_REPLICA_INFO, self._replica_info),
            (codes.CONTROLLER_GET_SYNC_STATE_DATA, self._sync_state_data),
            (codes.GET_CONTROLLER_CONFIG, self._get_config),
            (codes.UPDATE_CONTROLLER_CONFIG, self._update_config),
            (codes.CLEAN_BROKER_DATA, self._clean_broker_data),
        ):
            server.register(code, handler)
        server.add_connection_listener(on_close=self._connection_closed)

    async def start(self) -> None:
        c = self.config
        self.replicated = await asyncio.to_thread(
            open_state, c.controller_d_leger_self_id, c.raft_peers, c.store_dir, c.controller_raft_password
        )
        self._started_ms = self.clock.now_ms()
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_loop(), name="controller scan")

    async def stop(self) -> None:
        for task in list(self._side_tasks):
            task.cancel()
        if self._scan_task is not None:
            self._scan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan_task
        if self.replicated is not None:
            await asyncio.to_thread(self.replicated.close)
            self.replicated = None

    # ------------------------------------------------------------------------------------ handlers
    def _not_leader(self) -> RemotingCommand | None:
        if self.replicated is None or not self.replicated.is_leader:
            leader = self.replicated.leader_id if self.replicated is not None else ""
            return RemotingCommand.response(
                NOT_LEADER, f"not the controller leader (leader: {leader or '?'})"
            )
        return None

    def _heartbeat(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = request.ext_fields
        try:
            info = BrokerLive(
                broker_name=f["brokerName"],
                broker_id=_int(f, "brokerId"),
                address=f["brokerAddr"],
                last_ms=self.clock.now_ms(),
                timeout_ms=_int(f, "heartbeatTimeoutMills", 10_000),
                epoch=_int(f, "epoch", 0),
                max_offset=_int(f, "maxOffset", 0),
                priority=_int(f, "electionPriority", 2**31 - 1),
                conn=conn,
            )
        except (KeyError, ValueError) as exc:
            return RemotingCommand.response(INVALID_REQUEST, f"bad BROKER_HEARTBEAT: {exc}")
        self.liveness.heartbeat(info)
        return RemotingCommand.response(SUCCESS)

    def _metadata(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        state = self.state
        fields = {
            "group": self.config.controller_d_leger_group or "",
            "controllerLeaderId": state.leader_id,
            "controllerLeaderAddress": self.config.peers.get(state.leader_id, ""),  # its remoting address
            "isLeader": "true" if state.is_leader else "false",
            "peers": self.config.controller_d_leger_peers or "",
        }
        return RemotingCommand.response(SUCCESS, None, fields)

    def _next_broker_id(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        refused = self._not_leader()
        if refused is not None:
            return refused
        name = request.ext_fields.get("brokerName", "")
        group = self.state.state.group(name)
        next_id = group.next_id if group is not None else 1
        fields = {"clusterName": request.ext_fields.get("clusterName", ""), "brokerName": name}
        return RemotingCommand.response(SUCCESS, None, {**fields, "nextBrokerId": str(next_id)})

    async def _submit(self, command: dict[str, Any]) -> dict[str, Any]:
        refused = self._not_leader()
        if refused is not None:
            return {"code": refused.code, "remark": refused.remark}
        return await self.state.submit(command)

    async def _apply_broker_id(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = request.ext_fields
        result = await self._submit(
            {
                "op": "apply_broker_id",
                "clusterName": f.get("clusterName", ""),
                "brokerName": f.get("brokerName", ""),
                "brokerId": _int(f, "appliedBrokerId", -1),
                "checkCode": f.get("registerCheckCode", ""),
            }
        )
        keep = {"clusterName": f.get("clusterName", ""), "brokerName": f.get("brokerName", "")}
        return _answer({"code": result["code"], "remark": result.get("remark"), **keep})

    async def _register(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = request.ext_fields
        result = await self._submit(
            {
                "op": "register",
                "brokerName": f.get("brokerName", ""),
                "brokerId": _int(f, "brokerId", -1),
                "brokerAddress": f.get("brokerAddress", ""),
            }
        )
        return _answer(result, sync_state_set_body(result) if result["code"] == SUCCESS else b"")

    async def _elect(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = request.ext_fields
        designate = f.get("designateElect", "false").strip().lower() == "true"  # an operator's electMaster
        result = await self.elect(
            f.get("brokerName", ""), _int(f, "brokerId", NO_MASTER), designate=designate
        )
        ok = result["code"] in (SUCCESS, MASTER_STILL_EXIST)
        return _answer(result, sync_state_set_body(result) if ok else b"")

    async def _alter(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        f = request.ext_fields
        try:
            body = orjson.loads(request.body_bytes())
            new_set = [int(i) for i in body["syncStateSet"]]
        except (ValueError, TypeError, KeyError) as exc:
            return RemotingCommand.response(INVALID_REQUEST, f"bad SyncStateSet body: {exc!r}")
        name = f.get("brokerName", "")
        result = await self._submit(
            {
                "op": "alter_sync_state_set",
                "brokerName": name,
                "masterBrokerId": _int(f, "masterBrokerId", NO_MASTER),
                "masterEpoch": _int(f, "masterEpoch", -1),
                "syncStateSetEpoch": _int(body, "syncStateSetEpoch", -1),
                "syncStateSet": new_set,
                "alive": sorted(self.liveness.alive(name)),
            }
        )
        if result["code"] == SUCCESS:
            log.info("group %s: SyncStateSet %s (epoch %s)", name, new_set, result["syncStateSetEpoch"])
            result = {"code": SUCCESS, "newSyncStateSetEpoch": result["syncStateSetEpoch"]}
        return _answer(result)

    def _replica_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        refused = self._not_leader()
        if refused is not None:
            return refused
        group = self.state.state.group(request.ext_fields.get("brokerName", ""))
        if group is None:
            return RemotingCommand.response(codes.BROKER_METADATA_NOT_EXIST, "no such broker group")
        return _answer(group.replica_info(), sync_state_set_body(group))

    def _sync_state_data(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """CONTROLLER_GET_SYNC_STATE_DATA: BrokerReplicasInfo for the broker names in the JSON body."""
        refused = self._not_leader()
        if refused is not None:
            return refused
        try:
            names = [str(n) for n in orjson.loads(request.body_bytes() or b"[]")]
        except (ValueError, TypeError) as exc:
            return RemotingCommand.response(INVALID_REQUEST, f"body must be a JSON list of names: {exc!r}")
        table: dict[str, Any] = {}
        for name in names:
            group = self.state.state.group(name)
            if group is None:
                continue
            alive = self.liveness.alive(name)

            def replica(bid: int, addr: str, name: str = name, alive: Any = alive) -> dict[str, Any]:
                return {"brokerName": name, "brokerId": bid, "brokerAddress": addr, "alive": bid in alive}

            table[name] = {
                "masterBrokerId": group.master_id,
                "masterAddress": group.master_address,
                "masterEpoch": group.master_epoch,
                "syncStateSetEpoch": group.sync_state_set_epoch,
                "inSyncReplicas": [
                    replica(b, a) for b, a in group.brokers.items() if b in group.sync_state_set
                ],
                "notInSyncReplicas": [
                    replica(b, a) for b, a in group.brokers.items() if b not in group.sync_state_set
                ],
            }
        return RemotingCommand.response(SUCCESS, None, None, orjson.dumps({"replicasInfoTable": table}))

    def _get_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_CONTROLLER_CONFIG: this controller's keys as properties text."""
        text = "".join(f"{k}={v}\n" for k, v in sorted(self.config.properties().items()))
        return RemotingCommand.response(SUCCESS, None, None, text.encode())

    def _update_config(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """UPDATE_CONTROLLER_CONFIG: properties text applied to this controller (each is told itself)."""
        try:
            self.config.update(decode_properties_text(request.body_bytes().decode("utf-8")))
        except PermissionError as exc:
            return RemotingCommand.response(NO_PERMISSION, str(exc))
        except (ValueError, UnicodeDecodeError) as exc:
            return RemotingCommand.response(INVALID_REQUEST, str(exc))
        log.info("controller config updated: %s", request.body_bytes().decode().strip().replace("\n", ", "))
        return RemotingCommand.response(SUCCESS)

    async def _clean_broker_data(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """CLEAN_BROKER_DATA: forget a group, or some of its broker ids (`1;2;3`), on the leader."""
        f = request.ext_fields
        name = f.get("brokerName", "")
        try:
            ids = [int(i) for i in f.get("brokerControllerIdsToClean", "").split(";") if i.strip()]
        except ValueError as exc:
            return RemotingCommand.response(
                codes.INVALID_CLEAN_BROKER_METADATA, f"brokerControllerIdsToClean: {exc}"
            )
        living = f.get("isCleanLivingBroker", f.get("cleanLivingBroker", "false")).strip().lower() == "true"
        alive = sorted(self.liveness.alive(name))
        command = {
            "op": "clean_broker_data",
            "brokerName": name,
            "ids": ids,
            "alive": alive,
            "cleanLiving": living,
        }
        result = await self._submit(command)
        if result["code"] == SUCCESS:
            log.warning("controller: metadata of %s cleaned (ids %s)", name, ids or "all")
        return _answer(result)

    # ------------------------------------------------------------------------------------ election
    async def elect(
        self, broker_name: str, preferred: int = NO_MASTER, *, force: bool = False, designate: bool = False
    ) -> dict[str, Any]:
        alive = {
            bid: [info.epoch, info.max_offset, info.priority]
            for bid, info in self.liveness.alive(broker_name).items()
        }
        before = self.state.state.group(broker_name)
        old_master = before.master_id if before is not None else NO_MASTER
        result = await self._submit(
            {
                "op": "elect",
                "brokerName": broker_name,
                "brokerId": preferred,
                "alive": {str(k): v for k, v in alive.items()},
                "unclean": self.config.enable_elect_unclean_master,
                "force": force,
                "designate": designate,
            }
        )
        if result["code"] == ELECT_MASTER_FAILED and old_master != NO_MASTER:
            log.warning("group %s: master %s lost, no eligible replica alive", broker_name, old_master)
        if result["code"] == SUCCESS and result["masterBrokerId"] != old_master:
            self.elections += 1
            log.info(
                "group %s: broker %s elected master (epoch %s, was %s)",
                broker_name,
                result["masterBrokerId"],
                result["masterEpoch"],
                old_master,
            )
            if self.config.notify_broker_role_changed:
                self._notify(broker_name, result)
        return result

    def _notify(self, broker_name: str, result: dict[str, Any]) -> None:
        fields = {
            k: str(result[k]) for k in ("masterAddress", "masterEpoch", "syncStateSetEpoch", "masterBrokerId")
        }
        for info in self.liveness.alive(broker_name).values():
            if isinstance(info.conn, Connection) and not info.conn.closed:
                request = RemotingCommand.request(
                    codes.NOTIFY_BROKER_ROLE_CHANGED, fields, sync_state_set_body(result), oneway=True
                )
                self._side_task(_send_quietly(info.conn, request))

    def _side_task(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run `coro` beside the request, referenced until it is done (the loop keeps weak ones)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def _connection_closed(self, conn: Connection) -> None:
        for name in self.liveness.connection_closed(conn):
            if self.replicated is not None and self.replicated.is_leader:
                self._side_task(self._check_group(name))

    async def _check_group(self, name: str) -> None:
        """Elect when the group's master is not alive (and was seen, or the grace after start passed)."""
        if name in self._electing or self.replicated is None or not self.replicated.is_leader:
            return
        group = self.replicated.state.group(name)
        if group is None:
            return
        if group.master_id != NO_MASTER and self.liveness.is_alive(name, group.master_id):
            return
        if group.master_id == NO_MASTER and not group.sync_state_set:
            return  # a fresh group: its first broker asks for the election itself
        if self.clock.now_ms() - self._started_ms < STARTUP_GRACE_MS and name not in self.liveness.groups():
            return
        silence = self.liveness.silence_ms(name, group.master_id)
        log.info(
            "group %s: master %s %s; electing",
            name,
            group.master_id,
            "gone" if silence is None else f"silent for {silence} ms",
        )
        self._electing.add(name)
        try:
            await self.elect(name)
        finally:
            self._electing.discard(name)

    def _next_scan_in(self, interval: float) -> float:
        """Seconds to the next scan: the interval, or sooner when a master's heartbeat lapses before it
        (so a silent master is found when its timeout passes, not up to an interval later)."""
        if self.replicated is None:
            return interval
        masters = {
            n: g.master_id for n, g in self.replicated.state.groups.items() if g.master_id != NO_MASTER
        }
        due = self.liveness.next_expiry_ms(masters)
        if due is None:
            return interval
        return min(interval, max(0.05, (due - self.clock.now_ms()) / 1000 + 0.01))

    async def _scan_loop(self) -> None:
        while True:
            interval = self.config.scan_not_active_broker_interval / 1000  # (updateControllerConfig)
            await asyncio.sleep(self._next_scan_in(interval))
            if self.replicated is None or not self.replicated.is_leader:
                continue
            for name in list(self.replicated.state.groups):
                try:
                    await self._check_group(name)
                except Exception:
                    log.exception("controller: checking group %s failed", name)


async def _send_quietly(conn: Connection, request: RemotingCommand) -> None:
    with contextlib.suppress(Exception):
        await conn.invoke_oneway(request)
