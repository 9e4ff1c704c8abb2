"""The controller's replicated state: per broker group its ids, master, epochs and SyncStateSet (sans-IO).

Every change is a command (a dict of plain values) applied by `ReplicasState.apply`, deterministic given
the command, so each controller of a Raft group applies the same commands in the same order to the same
state. Liveness is not state: the leader puts what it saw (alive brokers, their offsets) in the command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# RocketMQ 5's controller response codes (ResponseCode.CONTROLLER_*).
SUCCESS = 0
NO_PERMISSION = 16
FENCED_MASTER_EPOCH = 2000
FENCED_SYNC_STATE_SET_EPOCH = 2001
INVALID_MASTER = 2002
INVALID_REPLICAS = 2003
MASTER_NOT_AVAILABLE = 2004
INVALID_REQUEST = 2005
BROKER_NOT_ALIVE = 2006
NOT_LEADER = 2007
BROKER_METADATA_NOT_EXIST = 2008
INVALID_CLEAN_BROKER_METADATA = 2009
BROKER_NEED_TO_BE_REGISTERED = 2010
MASTER_STILL_EXIST = 2011
ELECT_MASTER_FAILED = 2012
BROKER_ID_INVALID = 2014

NO_MASTER = -1


@dataclass(slots=True)
class GroupState:
    """One broker group (a brokerName): what RocketMQ's BrokerReplicaInfo and SyncStateInfo hold."""

    cluster: str
    broker_name: str
    brokers: dict[int, str] = field(default_factory=dict)  # broker id -> address (or register check code)
    master_id: int = NO_MASTER
    master_epoch: int = 0
    sync_state_set: set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0

    @property
    def next_id(self) -> int:
        return max(self.brokers, default=0) + 1

    @property
    def master_address(self) -> str:
        return self.brokers.get(self.master_id, "") if self.master_id != NO_MASTER else ""

    def replica_info(self) -> dict[str, Any]:
        return {
            "code": SUCCESS,
            "masterBrokerId": self.master_id,
            "masterAddress": self.master_address,
            "masterEpoch": self.master_epoch,
            "syncStateSetEpoch": self.sync_state_set_epoch,
            "syncStateSet": sorted(self.sync_state_set),
        }


def _fail(code: int, remark: str, **more: Any) -> dict[str, Any]:
    return {"code": code, "remark": remark, **more}


class ReplicasState:
    """Every group's state, changed only through `apply`."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupState] = {}

    def apply(self, command: dict[str, Any]) -> dict[str, Any]:
        """Apply one command; returns its result (`code` plus the answer's fields)."""
        handler = _HANDLERS.get(str(command.get("op")))
        if handler is None:
            return _fail(INVALID_REQUEST, f"unknown controller command {command.get('op')!r}")
        return handler(self, command)

    def group(self, broker_name: str) -> GroupState | None:
        return self.groups.get(broker_name)

    # ------------------------------------------------------------------------------------ commands
    def _apply_broker_id(self, c: dict[str, Any]) -> dict[str, Any]:
        """CONTROLLER_APPLY_BROKER_ID: reserve `brokerId` for the broker with `checkCode`."""
        group = self.groups.get(c["brokerName"])
        if group is None:
            group = self.groups[c["brokerName"]] = GroupState(c["clusterName"], c["brokerName"])
        broker_id, check = int(c["brokerId"]), str(c["checkCode"])
        held = group.brokers.get(broker_id)
        if broker_id < 1 or (held is not None and held != check):
            return _fail(BROKER_ID_INVALID, f"broker id {broker_id} of {group.broker_name} is taken")
        group.brokers[broker_id] = check
        return {"code": SUCCESS}

    def _register(self, c: dict[str, Any]) -> dict[str, Any]:
        """CONTROLLER_REGISTER_BROKER: an applied id tells its address; the answer is the group's master."""
        group = self.groups.get(c["brokerName"])
        broker_id = int(c["brokerId"])
        if group is None or broker_id not in group.brokers:
            return _fail(BROKER_METADATA_NOT_EXIST, f"broker id {broker_id} of {c['brokerName']} not applied")
        group.brokers[broker_id] = str(c["brokerAddress"])
        return group.replica_info()

    def _elect(self, c: dict[str, Any]) -> dict[str, Any]:
        """Elect a master from the alive replicas in the SyncStateSet (any alive one when `unclean`, or when
        the group never had a master). `alive` maps id -> [epoch, maxOffset, priority]; the preferred
        broker (`brokerId`, -1 for none) wins if eligible, else the highest epoch, then offset, then
        priority (lower is preferred), then the lower id."""
        group = self.groups.get(c["brokerName"])
        if group is None:
            return _fail(BROKER_METADATA_NOT_EXIST, f"no broker group {c['brokerName']!r}")
        alive = {int(k): v for k, v in dict(c["alive"]).items() if int(k) in group.brokers}
        if c.get("designate"):
            return self._elect_designated(group, alive, int(c["brokerId"]), bool(c.get("unclean")))
        if group.master_id != NO_MASTER and group.master_id in alive and not c.get("force"):
            return {**group.replica_info(), "code": MASTER_STILL_EXIST, "remark": "the master is alive"}
        fresh = group.master_epoch == 0 and not group.sync_state_set
        eligible = set(alive) if (c.get("unclean") or fresh) else set(alive) & group.sync_state_set
        preferred = int(c.get("brokerId", NO_MASTER))
        if preferred in eligible:
            new_master = preferred
        elif eligible:
            new_master = min(eligible, key=lambda i: (-alive[i][0], -alive[i][1], alive[i][2], i))
        else:
            if group.master_id != NO_MASTER:
                group.master_id = NO_MASTER  # the old master is gone; nobody may take its place yet
                group.master_epoch += 1
            return {**group.replica_info(), "code": ELECT_MASTER_FAILED, "remark": "no eligible replica"}
        group.master_id = new_master
        group.master_epoch += 1
        group.sync_state_set = {new_master}
        group.sync_state_set_epoch += 1
        return group.replica_info()

    @staticmethod
    def _elect_designated(
        group: GroupState, alive: dict[int, Any], broker_id: int, unclean: bool
    ) -> dict[str, Any]:
        """An operator's electMaster: `broker_id` becomes master if alive and in the SyncStateSet (or any
        alive replica when unclean), even while the master lives; otherwise nothing changes."""
        if broker_id == group.master_id:
            return {
                **group.replica_info(),
                "code": MASTER_STILL_EXIST,
                "remark": f"{broker_id} is the master",
            }
        if broker_id not in alive or not (unclean or broker_id in group.sync_state_set):
            in_sync = sorted(group.sync_state_set)
            remark = f"broker {broker_id} is not an alive replica of the SyncStateSet {in_sync}"
            return _fail(ELECT_MASTER_FAILED, remark)
        group.master_id = broker_id
        group.master_epoch += 1
        group.sync_state_set = {broker_id}
        group.sync_state_set_epoch += 1
        return group.replica_info()

    def _clean_broker_data(self, c: dict[str, Any]) -> dict[str, Any]:
        """CLEAN_BROKER_DATA: forget the listed broker ids of a group (all of it when none are listed);
        living brokers only with `cleanLiving` (a group with a master counts as living)."""
        name = str(c["brokerName"])
        group = self.groups.get(name)
        if group is None:
            return _fail(INVALID_CLEAN_BROKER_METADATA, f"broker {name} does not exist, nothing to clean")
        ids = {int(i) for i in c.get("ids") or []}
        if not c.get("cleanLiving"):
            if not ids and group.master_id != NO_MASTER:
                return _fail(INVALID_CLEAN_BROKER_METADATA, f"broker {name} is still alive, not cleaned")
            living = ids & {int(i) for i in c.get("alive", [])}
            if living:
                return _fail(INVALID_CLEAN_BROKER_METADATA, f"broker {name} ids {sorted(living)} are alive")
        if not ids:
            del self.groups[name]
            return {"code": SUCCESS}
        for broker_id in ids:
            group.brokers.pop(broker_id, None)
            group.sync_state_set.discard(broker_id)
        if group.master_id in ids:
            group.master_id = NO_MASTER
        if not group.brokers:
            del self.groups[name]
        return {"code": SUCCESS}

    def _alter_sync_state_set(self, c: dict[str, Any]) -> dict[str, Any]:
        """CONTROLLER_ALTER_SYNC_STATE_SET from the master of the current epoch, fenced by both epochs."""
        group = self.groups.get(c["brokerName"])
        if group is None:
            return _fail(BROKER_METADATA_NOT_EXIST, f"no broker group {c['brokerName']!r}")
        if int(c["masterBrokerId"]) != group.master_id:
            return _fail(INVALID_MASTER, f"broker {c['masterBrokerId']} is not the master")
        if int(c["masterEpoch"]) != group.master_epoch:
            return _fail(FENCED_MASTER_EPOCH, f"master epoch {c['masterEpoch']} != {group.master_epoch}")
        if int(c["syncStateSetEpoch"]) != group.sync_state_set_epoch:
            return _fail(
                FENCED_SYNC_STATE_SET_EPOCH,
                f"SyncStateSet epoch {c['syncStateSetEpoch']} != {group.sync_state_set_epoch}",
            )
        new_set = {int(i) for i in c["syncStateSet"]}
        alive = {int(i) for i in c["alive"]}
        if group.master_id not in new_set or not new_set <= set(group.brokers) or not new_set <= alive:
            return _fail(INVALID_REPLICAS, f"{sorted(new_set)} must hold the master and only alive replicas")
        if new_set != group.sync_state_set:
            group.sync_state_set = new_set
            group.sync_state_set_epoch += 1
        return group.replica_info()

    # ---------------------------------------------------------------------------------- snapshots
    def to_json(self) -> dict[str, Any]:
        return {
            name: {
                "cluster": g.cluster,
                "brokers": {str(k): v for k, v in g.brokers.items()},
                "masterId": g.master_id,
                "masterEpoch": g.master_epoch,
                "syncStateSet": sorted(g.sync_state_set),
                "syncStateSetEpoch": g.sync_state_set_epoch,
            }
            for name, g in self.groups.items()
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplicasState:
        state = cls()
        for name, g in data.items():
            state.groups[name] = GroupState(
                cluster=str(g["cluster"]),
                broker_name=name,
                brokers={int(k): str(v) for k, v in g["brokers"].items()},
                master_id=int(g["masterId"]),
                master_epoch=int(g["masterEpoch"]),
                sync_state_set={int(i) for i in g["syncStateSet"]},
                sync_state_set_epoch=int(g["syncStateSetEpoch"]),
            )
        return state


_HANDLERS = {
    "apply_broker_id": ReplicasState._apply_broker_id,
    "register": ReplicasState._register,
    "elect": ReplicasState._elect,
    "alter_sync_state_set": ReplicasState._alter_sync_state_set,
    "clean_broker_data": ReplicasState._clean_broker_data,
}
