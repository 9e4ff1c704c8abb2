"""What the controller's admin requests change: an operator's designated election, cleaning a group's
metadata, and the config a running controller takes (no processes)."""

from __future__ import annotations

import pytest

from orbitmq.controller.config import ControllerConfig
from orbitmq.controller.state import (
    ELECT_MASTER_FAILED,
    INVALID_CLEAN_BROKER_METADATA,
    MASTER_STILL_EXIST,
    SUCCESS,
    ReplicasState,
)

from .test_state import elect, group_of_three


def in_sync_group() -> ReplicasState:
    """broker 1 master of epoch 1, SyncStateSet {1, 2}; 3 registered but out of the set."""
    state = group_of_three()
    alive = {1: [0, 0, 9], 2: [0, 0, 9], 3: [0, 0, 9]}
    assert elect(state, alive, preferred=1)["masterBrokerId"] == 1
    state.groups["a"].sync_state_set = {1, 2}
    return state


def test_a_designated_election_moves_a_live_master_within_the_sync_state_set() -> None:
    state = in_sync_group()
    alive = {1: [1, 0, 9], 2: [1, 0, 9], 3: [1, 0, 9]}
    assert elect(state, alive, preferred=1, designate=True)["code"] == MASTER_STILL_EXIST
    refused = elect(state, alive, preferred=3, designate=True)  # alive, but not in sync
    assert refused["code"] == ELECT_MASTER_FAILED
    assert elect(state, {1: [1, 0, 9]}, preferred=2, designate=True)["code"] == ELECT_MASTER_FAILED  # dead
    assert state.groups["a"].master_id == 1 and state.groups["a"].master_epoch == 1  # nothing changed
    result = elect(state, alive, preferred=2, designate=True)
    assert (result["code"], result["masterBrokerId"], result["masterEpoch"]) == (SUCCESS, 2, 2)
    assert result["syncStateSet"] == [2]
    assert elect(state, alive, preferred=3, designate=True, unclean=True)["masterBrokerId"] == 3


def clean(state: ReplicasState, name: str = "a", ids: list[int] | None = None, **kw: object) -> int:
    command = {"op": "clean_broker_data", "brokerName": name, "ids": ids or [], "alive": [], **kw}
    return int(state.apply(command)["code"])


def test_cleaning_refuses_living_brokers_unless_asked() -> None:
    state = in_sync_group()
    assert clean(state, "b") == INVALID_CLEAN_BROKER_METADATA  # no such group
    assert clean(state) == INVALID_CLEAN_BROKER_METADATA  # the group has a master
    assert clean(state, ids=[2], alive=[1, 2]) == INVALID_CLEAN_BROKER_METADATA
    assert clean(state, ids=[2], alive=[1]) == SUCCESS
    group = state.groups["a"]
    assert 2 not in group.brokers and group.sync_state_set == {1}
    assert clean(state, ids=[1], alive=[1], cleanLiving=True) == SUCCESS
    assert group.master_id == -1 and 1 not in group.brokers
    assert clean(state) == SUCCESS and "a" not in state.groups


def test_config_updates_apply_whole_or_not_at_all() -> None:
    config = ControllerConfig.from_properties({"controllerRaftPassword": "s3cret"})
    assert config.properties()["controllerRaftPassword"] == "******"
    assert config.properties()["enableElectUncleanMaster"] == "false"
    config.update({"scanNotActiveBrokerInterval": "700", "enableElectUncleanMaster": "true"})
    assert config.scan_not_active_broker_interval == 700 and config.enable_elect_unclean_master
    with pytest.raises(PermissionError, match="controllerStorePath"):
        config.update({"controllerStorePath": "/elsewhere"})
    with pytest.raises(ValueError, match="unknown controller config key"):
        config.update({"scanNotActiveBrokerInterval": "800", "noSuchKey": "1"})
    with pytest.raises(ValueError, match="scanNotActiveBrokerInterval"):
        config.update({"enableElectUncleanMaster": "false", "scanNotActiveBrokerInterval": "0"})
    assert config.scan_not_active_broker_interval == 700 and config.enable_elect_unclean_master
