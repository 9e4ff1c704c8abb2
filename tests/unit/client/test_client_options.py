"""The options of every client, declared once per role (client/options.py): every client applies them
the same way, as an options object or as keywords, and each option is typed and documented."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
from pathlib import Path
from typing import Any

import pytest

from orbitmq.client import blocking
from orbitmq.client.aio import LitePullConsumer, Producer, PushConsumer, TransactionProducer
from orbitmq.client.allocation import AllocateAveragely, AllocateAveragelyByCircle
from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.client.options import (
    ClientKeywords,
    LitePullConsumerKeywords,
    LitePullConsumerOptions,
    ProducerKeywords,
    ProducerOptions,
    PushConsumerKeywords,
    PushConsumerOptions,
)
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
    assert (c.options.pull_batch_size, c.options.pull_threshold_for_queue) == (7, 11)
    assert c.pull_threshold_size_for_queue == 3 * 1024 * 1024
    assert c.options.offset_store_dir == tmp_path
    assert c.clock is clock
    d = factory("g1", "127.0.0.1:9876", consume_timestamp_ms=5)
    assert d.consume_timestamp_ms == 5
    assert isinstance(d.allocate_strategy, AllocateAveragely)
    assert d.message_model is MessageModel.CLUSTERING


OPTIONS = [
    (ProducerOptions, ProducerKeywords),
    (PushConsumerOptions, PushConsumerKeywords),
    (LitePullConsumerOptions, LitePullConsumerKeywords),
]


@pytest.mark.parametrize(("options", "keywords"), OPTIONS)
def test_keywords_type_every_option_and_nothing_else(options: type, keywords: type) -> None:
    """The TypedDict that types the constructors' keywords names each option with the option's type,
    plus the client keywords (instance, config, credentials, TLS, clock)."""
    fields = {f.name: str(f.type) for f in dataclasses.fields(options)}
    typed = {
        k: v.__forward_arg__
        for k, v in keywords.__annotations__.items()
        if k not in ClientKeywords.__annotations__
    }
    assert typed == fields


@pytest.mark.parametrize(
    "options", [ProducerOptions, PushConsumerOptions, LitePullConsumerOptions, ClientConfig]
)
def test_every_option_has_an_attribute_docstring(options: type) -> None:
    """docs/configuration.md is generated from these docstrings (a string literal after each field)."""
    documented: set[str] = set()
    for cls in options.__mro__:
        if cls is object:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        body = tree.body[0].body  # type: ignore[attr-defined]
        for field, after in itertools.pairwise(body):
            named = isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
            if named and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                documented.add(field.target.id)  # type: ignore[attr-defined]
    assert {f.name for f in dataclasses.fields(options)} <= documented


@pytest.mark.parametrize("factory", [Producer, blocking.Producer, TransactionProducer])
def test_producer_options_as_an_object_or_keywords(factory: Any) -> None:
    extra = {"listener": object()} if factory is TransactionProducer else {}
    given = ProducerOptions(send_timeout=7.0, retry_times=4)
    producer = factory("g1", "127.0.0.1:9876", options=given, retry_times=1, **extra)
    options = producer.options if factory is not blocking.Producer else producer.aio.options
    assert (options.send_timeout, options.retry_times) == (7.0, 1)  # a keyword wins over `options`
    assert given.retry_times == 4  # (frozen: replaced, not changed)
    with pytest.raises(TypeError, match="retry_tmes"):
        factory("g1", "127.0.0.1:9876", retry_tmes=3, **extra)


@pytest.mark.parametrize(
    ("field", "bad"),
    [("send_timeout", 0), ("retry_times", -1), ("compress_level", 10), ("max_header_templates", 0)],
)
def test_a_bad_producer_option_is_refused_with_its_name(field: str, bad: int) -> None:
    with pytest.raises(ClientError, match=field):
        Producer("g1", "127.0.0.1:9876", **{field: bad})


@pytest.mark.parametrize("factory", [PushConsumer, LitePullConsumer, blocking.PushConsumer])
def test_consumer_options_as_an_object_or_keywords(factory: Any) -> None:
    c = (
        factory("g1", "127.0.0.1:9876", options=PushConsumerOptions(pull_batch_size=3), consume_batch_size=5)
        if (factory is not LitePullConsumer)
        else factory(
            "g1", "127.0.0.1:9876", options=LitePullConsumerOptions(pull_batch_size=3), poll_timeout=2.0
        )
    )
    options = c.options if factory is not blocking.PushConsumer else c.aio.options
    assert options.pull_batch_size == 3
    with pytest.raises(ValueError, match="CLUSTER"):
        factory("g1", "127.0.0.1:9876", message_model="CLUSTER")


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_a_direct_socket_max_idle_not_above_zero_is_refused_with_its_name(bad: float) -> None:
    with pytest.raises(ClientError, match="direct_socket_max_idle"):
        ClientConfig(direct_socket_max_idle=bad)
    assert ClientConfig(direct_socket_max_idle=0.5).direct_socket_max_idle == 0.5
