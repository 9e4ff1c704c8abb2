"""Every client option, declared once per role: `ProducerOptions`, `PushConsumerOptions` and
`LitePullConsumerOptions` (frozen dataclasses: name, type, default and what it does). The asyncio and
blocking clients take them as `options=` or as keywords of the same names (typed by the `*Keywords`
TypedDicts, kept equal to the dataclasses by tests/unit/client/test_client_options.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from orbitmq.client.allocation import AllocateStrategy
from orbitmq.client.config import ClientConfig, parse_namesrv_addrs
from orbitmq.client.fault import LATENCY_MAX_MS, NOT_AVAILABLE_DURATION_MS
from orbitmq.client.instance import ClientInstance
from orbitmq.client.results import ConsumeFromWhere, MessageModel
from orbitmq.client.send_request import DEFAULT_MAX_HEADER_TEMPLATES, DEFAULT_TOPIC
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import ClientError
from orbitmq.message.validation import validate_group
from orbitmq.transport.tls import TlsClientSettings


@dataclass(frozen=True, slots=True)
class ProducerOptions:
    """A producer's settings: RocketMQ's DefaultMQProducer fields in snake_case, plus orbitmq's own."""

    send_timeout: float = 3.0
    """Seconds one send may take, all its attempts together (sendMsgTimeout)."""
    retry_times: int = 2
    """Attempts after the first for `send`, each on another broker when there is one
    (retryTimesWhenSendFailed)."""
    retry_times_async: int = 2
    """Attempts after the first for `send_async` (retryTimesWhenSendAsyncFailed)."""
    compress_over: int = 4096
    """Bodies of at least this many bytes are sent zlib-compressed (compressMsgBodyOverHowmuch)."""
    compress_level: int = 5
    """zlib level of compressed bodies, 0-9 (compressLevel)."""
    max_message_size: int = 4 * 1024 * 1024
    """The largest body (or batch) accepted, in bytes (maxMessageSize)."""
    retry_another_broker_when_not_store_ok: bool = False
    """Send again elsewhere when a broker stored the message but did not answer SEND_OK (flush or
    slave timeout) (retryAnotherBrokerWhenNotStoreOK)."""
    send_latency_fault_enable: bool = False
    """Avoid brokers that answered slowly or failed, for a while (sendLatencyFaultEnable)."""
    latency_max: Sequence[int] = LATENCY_MAX_MS
    """Latency steps in ms of the fault tolerance (latencyMax)."""
    not_available_durations: Sequence[int] = NOT_AVAILABLE_DURATION_MS
    """How long in ms a broker is avoided after a latency of the same step (notAvailableDuration)."""
    create_topic_key: str = DEFAULT_TOPIC
    """The template topic whose route a topic without one borrows, auto-created (createTopicKey)."""
    default_topic_queue_nums: int = 4
    """Queues of an auto-created topic (defaultTopicQueueNums)."""
    max_header_templates: int = DEFAULT_MAX_HEADER_TEMPLATES
    """orbitmq's own: request-header templates kept per (topic, broker, queue), cleared whole when
    full."""

    def __post_init__(self) -> None:
        if not self.send_timeout > 0:  # (also refuses NaN)
            raise ClientError(f"send_timeout must be a number of seconds above 0, got {self.send_timeout!r}")
        if min(self.retry_times, self.retry_times_async) < 0:
            raise ClientError(f"retry_times and retry_times_async must be 0 or more, got {self!r}")
        if not -1 <= self.compress_level <= 9:
            raise ClientError(f"compress_level must be -1-9 (zlib's levels), got {self.compress_level!r}")
        if self.max_header_templates < 1:
            raise ClientError(f"max_header_templates must be positive, not {self.max_header_templates}")


@dataclass(frozen=True, slots=True)
class ConsumerOptions:
    """What the push and lite pull consumers share: where they start, how queues are allocated, how
    much they pull and buffer."""

    message_model: MessageModel | str = MessageModel.CLUSTERING
    """CLUSTERING (the group shares the queues) or BROADCASTING (every consumer reads all)
    (messageModel)."""
    consume_from_where: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    """Where a group without a committed offset starts (consumeFromWhere)."""
    consume_timestamp_ms: int | None = None
    """The start of CONSUME_FROM_TIMESTAMP, epoch ms; None: half an hour ago (consumeTimestamp)."""
    allocate_strategy: AllocateStrategy | None = None
    """How the group's queues are shared out; None: AllocateAveragely (allocateMessageQueueStrategy)."""
    pull_batch_size: int = 32
    """Messages asked for per pull (pullBatchSize)."""
    pull_threshold_for_queue: int = 1000
    """Pulling a queue pauses while this many of its messages wait (pullThresholdForQueue)."""
    pull_threshold_size_for_queue_mib: int = 100
    """Pulling a queue pauses while this many MiB of its messages wait (pullThresholdSizeForQueue)."""
    offset_store_dir: Path | None = None
    """Where BROADCASTING offsets are kept; None: ~/.rocketmq_offsets."""

    def __post_init__(self) -> None:
        # Checked here, so a typo fails at construction (ValueError naming the allowed values).
        MessageModel(self.message_model)
        ConsumeFromWhere(self.consume_from_where)
        for name in ("pull_batch_size", "pull_threshold_for_queue", "pull_threshold_size_for_queue_mib"):
            if getattr(self, name) < 1:
                raise ClientError(f"{name} must be positive, got {getattr(self, name)!r}")


@dataclass(frozen=True, slots=True)
class PushConsumerOptions(ConsumerOptions):
    """A push consumer's settings (DefaultMQPushConsumer's fields in snake_case)."""

    consume_concurrency: int = 20
    """Listener calls in flight at once (consumeThreadMin/Max)."""
    consume_batch_size: int = 1
    """Messages per listener call (consumeMessageBatchMaxSize)."""
    consume_concurrently_max_span: int = 2000
    """Pulling a queue pauses while its oldest and newest waiting offsets are this far apart
    (consumeConcurrentlyMaxSpan)."""
    pull_interval: float = 0.0
    """Seconds between two pulls of one queue (pullInterval)."""
    max_reconsume_times: int = -1
    """Redeliveries before a message goes to the dead-letter queue; -1: 16, or unlimited when orderly
    (maxReconsumeTimes)."""
    suspend_current_queue_time: float = 1.0
    """Seconds an orderly queue waits after its listener asked to suspend it
    (suspendCurrentQueueTimeMillis)."""


@dataclass(frozen=True, slots=True)
class LitePullConsumerOptions(ConsumerOptions):
    """A lite pull consumer's settings (DefaultLitePullConsumer's fields in snake_case)."""

    pull_batch_size: int = 10
    """Messages asked for per pull (pullBatchSize)."""
    auto_commit: bool = True
    """Commit what `poll()` returned, from within `poll()` and at shutdown (autoCommit)."""
    auto_commit_interval: float = 5.0
    """Seconds between automatic commits at most (autoCommitIntervalMillis)."""
    pull_threshold_for_all: int = 10000
    """Pulling pauses while this many messages of all queues wait (pullThresholdForAll)."""
    consume_max_span: int = 2000
    """Pulling a queue pauses while its waiting offsets are this far apart (consumeMaxSpan)."""
    poll_timeout: float = 5.0
    """Seconds `poll()` waits for messages by default (pollTimeoutMillis)."""
    broker_suspend_ms: int = 20000
    """How long the broker holds a pull that finds nothing, in ms (brokerSuspendMaxTimeMillis)."""


class ClientKeywords(TypedDict, total=False):
    """Keywords every client takes besides its options: a shared instance or a config for its own,
    credentials and TLS (applied to its own config), and a clock (tests)."""

    instance: ClientInstance | None
    config: ClientConfig | None
    access_key: str | None
    secret_key: str | None
    security_token: str | None
    tls: bool | TlsClientSettings | None
    clock: Clock


class ProducerKeywords(ClientKeywords, total=False):
    send_timeout: float
    retry_times: int
    retry_times_async: int
    compress_over: int
    compress_level: int
    max_message_size: int
    retry_another_broker_when_not_store_ok: bool
    send_latency_fault_enable: bool
    latency_max: Sequence[int]
    not_available_durations: Sequence[int]
    create_topic_key: str
    default_topic_queue_nums: int
    max_header_templates: int


class _ConsumerKeywords(ClientKeywords, total=False):
    message_model: MessageModel | str
    consume_from_where: ConsumeFromWhere | str
    consume_timestamp_ms: int | None
    allocate_strategy: AllocateStrategy | None
    pull_batch_size: int
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue_mib: int
    offset_store_dir: Path | None


class PushConsumerKeywords(_ConsumerKeywords, total=False):
    consume_concurrency: int
    consume_batch_size: int
    consume_concurrently_max_span: int
    pull_interval: float
    max_reconsume_times: int
    suspend_current_queue_time: float


class LitePullConsumerKeywords(_ConsumerKeywords, total=False):
    auto_commit: bool
    auto_commit_interval: float
    pull_threshold_for_all: int
    consume_max_span: int
    poll_timeout: float
    broker_suspend_ms: int


_CLIENT_KEYWORDS = frozenset(ClientKeywords.__annotations__)
OptionsT = TypeVar("OptionsT", ProducerOptions, PushConsumerOptions, LitePullConsumerOptions)


@dataclass(slots=True)
class ClientSetup:
    """What a client's constructor resolved besides its options."""

    group: str
    instance: ClientInstance | None  # a shared instance, or None: the client makes its own at start()
    config: ClientConfig | None  # the own instance's config (None with a shared instance)
    clock: Clock


def client_setup(
    group: str,
    namesrv_addrs: str | Sequence[str] | None,
    options: OptionsT,
    keywords: Mapping[str, Any],
) -> tuple[ClientSetup, OptionsT]:
    """Validate `group` and split a constructor's keywords: the client keywords (ClientKeywords) make
    the setup, the rest replace fields of `options` (an unknown name raises TypeError, as a call with
    an unknown keyword does)."""
    given = {k: v for k, v in keywords.items() if k not in _CLIENT_KEYWORDS}
    if given:
        options = dataclasses.replace(options, **given)
    instance: ClientInstance | None = keywords.get("instance")
    security = tuple(keywords.get(k) for k in ("access_key", "secret_key", "security_token", "tls"))
    config = own_config(group, namesrv_addrs, instance, keywords.get("config"), security)
    return ClientSetup(group, instance, config, keywords.get("clock", SYSTEM_CLOCK)), options


def own_config(
    group: str,
    namesrv_addrs: str | Sequence[str] | None,
    instance: ClientInstance | None,
    config: ClientConfig | None,
    security: tuple[Any, ...],
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
