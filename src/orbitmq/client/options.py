"""Constructor work the clients share, written once.

Every client (Producer, PushConsumer, LitePullConsumer) either joins a shared ClientInstance or builds
its own at start() from a ClientConfig; `own_config` decides which config that is (nameserver
addresses validated here, so a typo fails at construction; credentials and TLS applied). The two
consumers also share how they read the consume-position options: `ConsumerOptions` sets those
attributes (and calls `own_config`); each consumer's constructor calls it, then sets its own options.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orbitmq.client.allocation import AllocateAveragely, AllocateStrategy
from orbitmq.client.config import ClientConfig, parse_namesrv_addrs
from orbitmq.client.instance import ClientInstance
from orbitmq.client.results import ConsumeFromWhere, MessageModel
from orbitmq.common.clock import Clock
from orbitmq.message.validation import validate_group
from orbitmq.transport.tls import TlsClientSettings

# How far back CONSUME_FROM_TIMESTAMP starts when no timestamp is given (RocketMQ: half an hour).
DEFAULT_CONSUME_TIMESTAMP_AGO_MS = 30 * 60 * 1000


def own_config(
    group: str,
    namesrv_addrs: str | Sequence[str] | None,
    instance: ClientInstance | None,
    config: ClientConfig | None,
    security: tuple[str | None, str | None, str | None, bool | TlsClientSettings | None],
) -> ClientConfig | None:
    """Validate `group`; with a shared `instance`, return `config` untouched (the instance has its own).
    Otherwise return the config the client's own ClientInstance will use: `config` or a new one, with
    the nameserver addresses (given, or NAMESRV_ADDR when neither names any) and `security`: access key,
    secret key, security token and TLS, as the clients' keyword arguments of those names give them."""
    validate_group(group)
    if instance is not None:
        return config
    config = config or ClientConfig()
    if namesrv_addrs is not None or not config.namesrv_addrs:
        config.namesrv_addrs = parse_namesrv_addrs(namesrv_addrs)
    access_key, secret_key, security_token, tls = security
    config.set_security(access_key=access_key, secret_key=secret_key, security_token=security_token, tls=tls)
    return config


class ConsumerOptions:
    """The options PushConsumer and LitePullConsumer read the same way (their public signatures list
    them; the values arrive here positionally from their constructors)."""

    group: str
    instance: ClientInstance | None
    _config: ClientConfig | None
    _own_instance: bool
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    consume_timestamp_ms: int
    allocate_strategy: AllocateStrategy
    pull_batch_size: int
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue: int  # bytes
    offset_store_dir: Path | None
    clock: Clock

    def _set_consumer_options(  # noqa: PLR0917 -- the consumers' shared parameters, in their order
        self,
        group: str,
        namesrv_addrs: str | Sequence[str] | None,
        instance: ClientInstance | None,
        config: ClientConfig | None,
        access_key: str | None,
        secret_key: str | None,
        security_token: str | None,
        tls: bool | TlsClientSettings | None,
        message_model: MessageModel | str,
        consume_from_where: ConsumeFromWhere | str,
        consume_timestamp_ms: int | None,
        allocate_strategy: AllocateStrategy | None,
        pull_batch_size: int,
        pull_threshold_for_queue: int,
        pull_threshold_size_for_queue_mib: int,
        offset_store_dir: Path | None,
        clock: Clock,
    ) -> None:
        security = (access_key, secret_key, security_token, tls)
        self._config = own_config(group, namesrv_addrs, instance, config, security)
        self.group = group
        self._own_instance = instance is None
        self.instance = instance
        self.message_model = MessageModel(message_model)
        self.consume_from_where = ConsumeFromWhere(consume_from_where)
        if consume_timestamp_ms is None:
            consume_timestamp_ms = clock.now_ms() - DEFAULT_CONSUME_TIMESTAMP_AGO_MS
        self.consume_timestamp_ms = consume_timestamp_ms
        self.allocate_strategy = allocate_strategy or AllocateAveragely()
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue_mib * 1024 * 1024
        self.offset_store_dir = offset_store_dir
        self.clock = clock
