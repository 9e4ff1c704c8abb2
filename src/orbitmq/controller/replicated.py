"""Where the controller's state lives: one controller's file, or a Raft group of controllers (PySyncObj).

Both apply `ReplicasState` commands and answer with the command's result. With Raft a command is applied
by every controller once a majority has it in its journal; only the leader submits, and PySyncObj's
own thread calls back, so results cross into the event loop with call_soon_threadsafe.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Protocol

from orbitmq.controller.state import NOT_LEADER, ReplicasState

log = logging.getLogger("orbitmq.controller")

SUBMIT_TIMEOUT = 5.0


class ReplicatedState(Protocol):
    @property
    def state(self) -> ReplicasState: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def leader_id(self) -> str: ...

    async def submit(self, command: dict[str, Any]) -> dict[str, Any]: ...

    def close(self) -> None: ...


class LocalState:
    """A single controller: commands apply at once and the state is rewritten to `state.json`."""

    def __init__(self, store_dir: Path) -> None:
        store_dir.mkdir(parents=True, exist_ok=True)
        self._path = store_dir / "state.json"
        if self._path.exists():
            self.state = ReplicasState.from_json(json.loads(self._path.read_text(encoding="utf-8")))
        else:
            self.state = ReplicasState()

    @property
    def is_leader(self) -> bool:
        return True

    @property
    def leader_id(self) -> str:
        return "local"

    async def submit(self, command: dict[str, Any]) -> dict[str, Any]:
        result = self.state.apply(command)
        tmp = self._path.with_name("state.json.tmp")
        tmp.write_text(json.dumps(self.state.to_json()), encoding="utf-8")
        os.replace(tmp, self._path)  # a crash leaves the old state or the new one
        return result

    def close(self) -> None:
        pass


class RaftState:
    """A controller of a Raft group: PySyncObj replicates the commands, journaled in `store_dir`."""

    def __init__(self, self_id: str, peers: dict[str, str], store_dir: Path, password: str | None) -> None:
        try:
            from pysyncobj import SyncObj, SyncObjConf, SyncObjConsumer, replicated
        except ImportError:
            raise ValueError(
                "several controllers replicate by Raft with PySyncObj: pip install 'orbitmq[controller]'"
            ) from None

        class Consumer(SyncObjConsumer):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__()
                self.state = ReplicasState()  # set after super().__init__: PySyncObj snapshots it

            @replicated  # type: ignore[untyped-decorator]
            def apply(self, command: dict[str, Any]) -> dict[str, Any]:
                return self.state.apply(command)

        store_dir.mkdir(parents=True, exist_ok=True)
        conf = SyncObjConf(
            journalFile=str(store_dir / "raft.journal"),
            fullDumpFile=str(store_dir / "raft.dump"),
            useFork=False,  # never fork a process that runs an event loop
            dynamicMembershipChange=False,
            connectionRetryTime=1.0,
            raftMinTimeout=0.4,
            raftMaxTimeout=1.4,
            leaderFallbackTimeout=3.0,
            password=password,
        )
        if password is None:
            log.warning(
                "controller Raft port %s takes pickled messages unauthenticated: keep it reachable by the "
                "peers only, or set controllerRaftPassword",
                peers[self_id],
            )
        self._ids = {address: peer_id for peer_id, address in peers.items()}
        self._consumer = Consumer()
        others = [address for peer_id, address in peers.items() if peer_id != self_id]
        self._sync = SyncObj(peers[self_id], others, conf=conf, consumers=[self._consumer])

    @property
    def state(self) -> ReplicasState:
        state: ReplicasState = self._consumer.state
        return state

    @property
    def is_leader(self) -> bool:
        return bool(self._sync._isLeader())

    @property
    def leader_id(self) -> str:
        leader = self._sync._getLeader()
        return self._ids.get(str(leader.id), str(leader.id)) if leader is not None else ""

    async def submit(self, command: dict[str, Any]) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[dict[str, Any]] = loop.create_future()

        def settle(result: Any, error: Any) -> None:
            if not done.done():
                if error == 0 and isinstance(result, dict):  # FAIL_REASON.SUCCESS
                    done.set_result(result)
                else:
                    done.set_result({"code": NOT_LEADER, "remark": f"raft did not commit: reason {error}"})

        def callback(result: Any, error: Any) -> None:  # on PySyncObj's thread
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(settle, result, error)

        self._consumer.apply(command, callback=callback)
        try:
            return await asyncio.wait_for(done, SUBMIT_TIMEOUT)
        except TimeoutError:
            return {"code": NOT_LEADER, "remark": "raft did not commit in time"}

    def close(self) -> None:
        self._sync.destroy_synchronous()


def open_state(
    self_id: str | None, peers: dict[str, str], store_dir: Path, password: str | None = None
) -> ReplicatedState:
    """Raft when several peers are configured, else the single controller's file."""
    if len(peers) > 1 and self_id is not None:
        return RaftState(self_id, peers, store_dir, password)
    return LocalState(store_dir)
