"""The constructor work Producer, PushConsumer and LitePullConsumer share (client/options.py): every
client applies the same options the same way, and the consumers' public signatures stay as they were."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from orbitmq.client.aio import LitePullConsumer, Producer, PushConsumer
from orbitmq.client.allocation import AllocateAveragely, AllocateAveragelyByCircle
from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.client.results import ConsumeFromWhere, MessageModel
from orbitmq.common.clock import FakeClock
from orbitmq.common.errors import ClientError

CLIENTS = [Producer, PushConsumer, LitePullConsumer]
CONSUMERS = [PushConsumer, LitePullConsumer]


@pytest.mark.parametrize("factory", CLIENTS)
def test_own_instance_config_gets_addresses_and_security(factory: type) -> None:
    client = factory(
        "g1", "127.0.0.1:9876;127.0.0.2:9876", access_key="ak", secret_key="sk", security_token="t", tls=True
    )
    cfg = client._config
    assert isinstance(cfg, ClientConfig)
    assert cfg.namesrv_addrs == ["127.0.0.1:9876", "127.0.0.2:9876"]
    assert (cfg.access_key, cfg.secret_key, cfg.security_token, cfg.tls) == ("ak", "sk", "t", True)
    assert client._own_instance
    assert client.group == "g1"


@pytest.mark.parametrize("factory", CLIENTS)
def test_given_config_keeps_its_addresses_and_credentials_unless_overridden(factory: type) -> None:
    given = ClientConfig(namesrv_addrs=["10.0.0.1:9876"], access_key="mine", secret_key="s")
    client = factory("g1", config=given, secret_key="override")
    assert client._config is given
    assert given.namesrv_addrs == ["10.0.0.1:9876"]
    assert (given.access_key, given.secret_key) == ("mine", "override")


@pytest.mark.parametrize("factory", CLIENTS)
def test_shared_instance_leaves_the_config_alone(factory: type) -> None:
    instance = ClientInstance(ClientConfig(namesrv_addrs=["127.0.0.1:1"]))
    client = factory("g1", "not an address", instance=instance, access_key="ak")  # not parsed: not used
    assert client.instance is instance
    assert client._config is None
    assert not client._own_instance


@pytest.mark.parametrize("factory", CLIENTS)
def test_bad_group_is_refused(factory: type) -> None:
    with pytest.raises(ClientError):
        factory("bad group!", "127.0.0.1:9876")


@pytest.mark.parametrize("factory", CONSUMERS)
def test_consumer_position_options(factory: type, tmp_path: Path) -> None:
    clock = FakeClock(now_ms=10_000_000)
    strategy = AllocateAveragelyByCircle()
    c = factory(
        "g1",
        "127.0.0.1:9876",
        message_model="BROADCASTING",
        consume_from_where="CONSUME_FROM_TIMESTAMP",
        allocate_strategy=strategy,
        pull_batch_size=7,
        pull_threshold_for_queue=11,
        pull_threshold_size_for_queue_mib=3,
        offset_store_dir=tmp_path,
        clock=clock,
    )
    assert c.message_model is MessageModel.BROADCASTING
    assert c.consume_from_where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
    assert c.consume_timestamp_ms == 10_000_000 - 30 * 60 * 1000  # half an hour back, as RocketMQ
    assert c.allocate_strategy is strategy
    assert (c.pull_batch_size, c.pull_threshold_for_queue) == (7, 11)
    assert c.pull_threshold_size_for_queue == 3 * 1024 * 1024
    assert c.offset_store_dir == tmp_path
    assert c.clock is clock
    d = factory("g1", "127.0.0.1:9876", consume_timestamp_ms=5)
    assert d.consume_timestamp_ms == 5
    assert isinstance(d.allocate_strategy, AllocateAveragely)
    assert d.message_model is MessageModel.CLUSTERING


SHARED = [
    "group",
    "namesrv_addrs",
    "instance",
    "config",
    "access_key",
    "secret_key",
    "security_token",
    "tls",
    "message_model",
    "consume_from_where",
    "consume_timestamp_ms",
    "allocate_strategy",
]


@pytest.mark.parametrize("factory", CONSUMERS)
def test_public_signature_lists_every_option(factory: type) -> None:
    """The shared base reads the options; the constructors still name each one (IDEs, help())."""
    params = inspect.signature(factory).parameters
    assert list(params)[: len(SHARED)] == SHARED
    assert params["namesrv_addrs"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in SHARED[2:])
    for name in ("pull_batch_size", "pull_threshold_for_queue", "offset_store_dir", "clock"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_a_direct_socket_max_idle_not_above_zero_is_refused_with_its_name(bad: float) -> None:
    with pytest.raises(ClientError, match="direct_socket_max_idle"):
        ClientConfig(direct_socket_max_idle=bad)
    assert ClientConfig(direct_socket_max_idle=0.5).direct_socket_max_idle == 0.5
