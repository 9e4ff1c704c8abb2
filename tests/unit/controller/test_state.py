"""The controller's state machine, its config and the epoch file, without processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.common.errors import StoreError
from orbitmq.controller.config import ControllerConfig
from orbitmq.controller.state import (
    BROKER_ID_INVALID,
    ELECT_MASTER_FAILED,
    FENCED_MASTER_EPOCH,
    INVALID_REPLICAS,
    MASTER_STILL_EXIST,
    SUCCESS,
    ReplicasState,
)
from orbitmq.replication.epoch_file import EpochFile, consistent_offset, format_epoch_text, parse_epoch_text


def group_of_three() -> ReplicasState:
    state = ReplicasState()
    for i in (1, 2, 3):
        c = {
            "op": "apply_broker_id",
            "clusterName": "C",
            "brokerName": "a",
            "brokerId": i,
            "checkCode": f"x{i}",
        }
        assert state.apply(c)["code"] == SUCCESS
        c = {"op": "register", "brokerName": "a", "brokerId": i, "brokerAddress": f"h:{i}"}
        assert state.apply(c)["code"] == SUCCESS
    return state


def elect(state: ReplicasState, alive: dict[int, list[int]], preferred: int = -1, **kw: object) -> dict:
    command = {"op": "elect", "brokerName": "a", "brokerId": preferred, "alive": alive, **kw}
    return state.apply(command)


def test_ids_are_unique_per_group() -> None:
    state = group_of_three()
    assert state.groups["a"].next_id == 4
    taken = {"op": "apply_broker_id", "clusterName": "C", "brokerName": "a", "brokerId": 2, "checkCode": "y"}
    assert state.apply(taken)["code"] == BROKER_ID_INVALID


def test_election_prefers_the_sync_state_set_and_the_newest_replica() -> None:
    state = group_of_three()
    alive = {1: [0, 0, 9], 2: [0, 0, 9], 3: [0, 0, 9]}
    assert elect(state, alive, preferred=1)["masterBrokerId"] == 1  # a fresh group takes any alive one
    assert elect(state, alive, preferred=2)["code"] == MASTER_STILL_EXIST
    alter = {
        "op": "alter_sync_state_set",
        "brokerName": "a",
        "masterBrokerId": 1,
        "masterEpoch": 1,
        "syncStateSetEpoch": 1,
        "syncStateSet": [1, 2, 3],
        "alive": [1, 2, 3],
    }
    assert state.apply(alter)["syncStateSetEpoch"] == 2
    assert state.apply({**alter, "masterEpoch": 0})["code"] == FENCED_MASTER_EPOCH
    bad = {**alter, "syncStateSetEpoch": 2, "syncStateSet": [2, 3]}
    assert state.apply(bad)["code"] == INVALID_REPLICAS  # the master must stay in its own set
    # Master 1 dies: 3 has the larger offset, so it wins over 2.
    result = elect(state, {2: [1, 100, 9], 3: [1, 200, 9]})
    assert (result["masterBrokerId"], result["masterEpoch"], result["syncStateSet"]) == (3, 2, [3])
    # 3 dies with SyncStateSet {3}: 2 is alive but out of the set, so nobody is elected...
    assert elect(state, {2: [1, 100, 9]})["code"] == ELECT_MASTER_FAILED
    assert state.groups["a"].master_id == -1
    # ... unless unclean elections are allowed.
    assert elect(state, {2: [1, 100, 9]}, unclean=True)["masterBrokerId"] == 2


def test_state_round_trips_through_json() -> None:
    state = group_of_three()
    elect(state, {1: [0, 0, 9]})
    again = ReplicasState.from_json(state.to_json())
    assert again.to_json() == state.to_json()


def test_unknown_command_is_refused() -> None:
    assert ReplicasState().apply({"op": "nope"})["code"] != SUCCESS


def test_controller_config_reads_rocketmq_keys() -> None:
    config = ControllerConfig.from_properties(
        {
            "controllerDLegerGroup": "g",
            "controllerDLegerPeers": "n0-127.0.0.1:9877;n1-127.0.0.1:9878",
            "controllerDLegerSelfId": "n1",
            "enableElectUncleanMaster": "true",
        }
    )
    assert config.peers == {"n0": "127.0.0.1:9877", "n1": "127.0.0.1:9878"}
    assert config.enable_elect_unclean_master
    with pytest.raises(ValueError, match="not one of"):
        ControllerConfig.from_properties({"controllerDLegerPeers": "n0-h:1", "controllerDLegerSelfId": "n9"})
    with pytest.raises(ValueError, match="ID-HOST:PORT"):
        ControllerConfig.from_properties({"controllerDLegerPeers": "n0:1", "controllerDLegerSelfId": "n0"})


def test_epoch_file_format_and_consistency(tmp_path: Path) -> None:
    f = EpochFile(tmp_path / "epochFileCheckpoint")
    assert f.append(1, 0) and f.append(3, 500)
    assert not f.append(2, 600)  # epochs only grow
    text = (tmp_path / "epochFileCheckpoint").read_text()
    assert text.splitlines()[0] == "2" and text.splitlines()[2:] == ["1-0", "3-500"]
    assert EpochFile(tmp_path / "epochFileCheckpoint").entries == [(1, 0), (3, 500)]
    with pytest.raises(StoreError):
        parse_epoch_text(text.replace("3-500", "3-501"))  # the CRC no longer matches
    assert parse_epoch_text(format_epoch_text([])) == []
    # An old master wrote epoch 3 up to 900; the new master's epoch 4 started at 700: cut at 700.
    assert consistent_offset([(1, 0), (3, 500)], 900, [(1, 0), (3, 500), (4, 700)], 1000) == 700
    # A slave behind the master keeps its whole log.
    assert consistent_offset([(1, 0)], 300, [(1, 0), (2, 800)], 1000) == 300
    assert consistent_offset([(5, 0)], 300, [(1, 0)], 1000) == 0
    f.truncate_from(500)
    assert f.entries == [(1, 0)]
