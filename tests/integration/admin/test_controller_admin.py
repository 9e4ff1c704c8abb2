"""mqadmin's controller verbs against a real controller (embedded in the nameserver) and a two-replica
group in controller mode: read the SyncStateSet, epochs, metadata and config; change the config; move
the master by electMaster; forget a stopped replica by cleanBrokerMetadata. Run without -n where mqadmin
runs without it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.integration.failover.test_broker_failover import BROKER_CONF

from orbitmq.admin.cli import main
from orbitmq.testing import ServerProcess
from orbitmq.testing.launch import start_broker, start_namesrv


class Group:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.namesrv = start_namesrv(
            workdir, enableControllerInNamesrv=True, controllerStorePath=workdir / "controller"
        )
        self.controller = self.namesrv.address
        self.brokers: list[ServerProcess] = [self.start_broker(i) for i in range(2)]

    def start_broker(self, i: int) -> ServerProcess:
        conf = {**BROKER_CONF, "controllerAddr": self.controller}
        return start_broker(self.workdir, self.namesrv.address, broker_id=i, role="SLAVE", **conf)

    def stop(self) -> None:
        for p in [*self.brokers, self.namesrv]:
            p.stop()


@pytest.fixture
def group(tmp_path: Path) -> Iterator[Group]:
    g = Group(tmp_path)
    try:
        yield g
    finally:
        g.stop()


@pytest.fixture
def admin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, str, str]]:
    """`admin(verb, *args)`: `orbitmq admin` in-process, no NAMESRV_ADDR; (rc, stdout, stderr)."""
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main(list(argv))
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


def ok_json(admin: Callable[..., tuple[int, str, str]], *argv: str) -> Any:
    rc, out, err = admin(*argv, "--json")
    assert rc == 0, err
    return orjson.loads(out)


def fails(admin: Callable[..., tuple[int, str, str]], *argv: str) -> str:
    rc, out, err = admin(*argv)
    assert rc == 1 and out == "", (rc, out, err)
    assert len(err.strip().splitlines()) == 1, err
    return err


def until(check: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what} not reached in {timeout} s")


def sync_state(admin: Callable[..., tuple[int, str, str]], g: Group) -> dict[str, Any]:
    table: dict[str, Any] = ok_json(admin, "getSyncStateSet", "-a", g.controller, "-b", "broker-a")
    return table.get("broker-a", {})


def in_sync(info: dict[str, Any]) -> list[int]:
    return sorted(r["brokerId"] for r in info.get("inSyncReplicas", []))


def test_read_verbs(group: Group, admin: Any) -> None:
    g = group
    info = until(lambda: (i := sync_state(admin, g)) and in_sync(i) == [1, 2] and i, "both replicas in sync")
    assert info["masterBrokerId"] == 1 and info["masterAddress"] == g.brokers[0].broker_addr
    assert info["masterEpoch"] == 1 and info["notInSyncReplicas"] == []
    assert all(r["alive"] for r in info["inSyncReplicas"])
    rc, text, _ = admin("getSyncStateSet", "-a", g.controller, "-b", "broker-a")
    assert rc == 0 and "#MasterBrokerId\t1" in text and "#SyncStateSetNums\t2" in text
    # -c needs the name server for the cluster's groups.
    by_cluster = ok_json(
        admin, "getSyncStateSet", "-a", g.controller, "-c", "DefaultCluster", "-n", g.namesrv.address
    )
    assert list(by_cluster) == ["broker-a"]
    assert "give a broker name (-b) or a cluster name (-c)" in fails(
        admin, "getSyncStateSet", "-a", g.controller
    )
    assert "no group broker-x" in admin("getSyncStateSet", "-a", g.controller, "-b", "broker-x")[1]

    meta = ok_json(admin, "getControllerMetaData", "-a", g.controller)
    assert meta["isLeader"] == "true"
    assert "#ControllerLeaderId" in admin("getControllerMetaData", "-a", g.controller)[1]

    epochs = ok_json(admin, "getBrokerEpoch", "-n", g.namesrv.address, "-b", "broker-a")
    by_id = {e["brokerId"]: e for e in epochs}
    assert sorted(by_id) == [1, 2]
    assert by_id[1]["epochList"][0]["epoch"] == 1 and by_id[1]["epochList"][0]["startOffset"] == 0
    assert by_id[1]["brokerAddr"] == g.brokers[0].broker_addr
    text = admin("getBrokerEpoch", "-n", g.namesrv.address, "-b", "broker-a")[1]
    assert "#Epoch: epoch=1 startOffset=0" in text
    assert "no name server address" in fails(admin, "getBrokerEpoch", "-b", "broker-a")


def test_config_verbs(group: Group, admin: Any) -> None:
    g = group
    configs = ok_json(admin, "getControllerConfig", "-a", g.controller)
    assert configs[g.controller]["scanNotActiveBrokerInterval"].isdigit()
    assert configs[g.controller]["enableElectUncleanMaster"] == "false"
    rc, out, err = admin(
        "updateControllerConfig", "-a", g.controller, "-k", "scanNotActiveBrokerInterval", "-v", "700"
    )
    assert rc == 0 and "update controller config success!" in out, err
    assert (
        ok_json(admin, "getControllerConfig", "-a", g.controller)[g.controller]["scanNotActiveBrokerInterval"]
        == "700"
    )
    assert "cannot be changed while the controller runs" in fails(
        admin, "updateControllerConfig", "-a", g.controller, "-k", "controllerStorePath", "-v", "/tmp/x"
    )
    assert "unknown controller config key" in fails(
        admin, "updateControllerConfig", "-a", g.controller, "-k", "noSuchKey", "-v", "1"
    )
    assert "scanNotActiveBrokerInterval" in fails(
        admin, "updateControllerConfig", "-a", g.controller, "-k", "scanNotActiveBrokerInterval", "-v", "0"
    )
    # A refused update changed nothing.
    assert (
        ok_json(admin, "getControllerConfig", "-a", g.controller)[g.controller]["scanNotActiveBrokerInterval"]
        == "700"
    )


def test_elect_master_then_clean_a_stopped_replica(group: Group, admin: Any) -> None:
    g = group
    until(lambda: in_sync(sync_state(admin, g)) == [1, 2], "both replicas in sync")
    elected = ok_json(
        admin, "electMaster", "-a", g.controller, "-b", "2", "-bn", "broker-a", "-c", "DefaultCluster"
    )
    assert elected["masterBrokerId"] == "2" and elected["masterEpoch"] == "2"
    assert elected["masterAddress"] == g.brokers[1].broker_addr
    # The old master follows: it becomes a slave of broker 2 and rejoins the SyncStateSet.
    info = until(
        lambda: (i := sync_state(admin, g)) and in_sync(i) == [1, 2] and i, "the old master rejoining"
    )
    assert info["masterBrokerId"] == 2 and info["masterEpoch"] == 2
    epochs = {
        e["brokerId"]: e for e in ok_json(admin, "getBrokerEpoch", "-n", g.namesrv.address, "-b", "broker-a")
    }
    assert [e["epoch"] for e in epochs[2]["epochList"]] == [1, 2]
    assert "CONTROLLER_MASTER_STILL_EXIST" in fails(
        admin, "electMaster", "-a", g.controller, "-b", "2", "-bn", "broker-a", "-c", "DefaultCluster"
    )
    assert "CONTROLLER_ELECT_MASTER_FAILED" in fails(
        admin, "electMaster", "-a", g.controller, "-b", "7", "-bn", "broker-a", "-c", "DefaultCluster"
    )
    # Nothing is cleaned while it lives.
    assert "CONTROLLER_INVALID_CLEAN_BROKER_METADATA" in fails(
        admin, "cleanBrokerMetadata", "-a", g.controller, "-bn", "broker-a"
    )
    assert "alive" in fails(admin, "cleanBrokerMetadata", "-a", g.controller, "-bn", "broker-a", "-b", "1")
    assert "does not exist" in fails(admin, "cleanBrokerMetadata", "-a", g.controller, "-bn", "broker-x")
    assert "-b takes broker ids" in fails(
        admin, "cleanBrokerMetadata", "-a", g.controller, "-bn", "broker-a", "-b", "x"
    )
    # Replica 1 stops for good: once the controller takes it for dead, its metadata can go.
    g.brokers[0].stop()
    until(
        lambda: (
            not any(
                r["alive"]
                for r in [*sync_state(admin, g)["inSyncReplicas"], *sync_state(admin, g)["notInSyncReplicas"]]
                if r["brokerId"] == 1
            )
        ),
        "replica 1 taken for dead",
    )
    rc, out, err = admin(
        "cleanBrokerMetadata", "-a", g.controller, "-bn", "broker-a", "-b", "1", "-c", "DefaultCluster"
    )
    assert rc == 0 and "metadata from controller success" in out, err
    info = sync_state(admin, g)
    assert in_sync(info) == [2] and info["notInSyncReplicas"] == []
