"""Options of the `orbitmq` Spark source and sink: parsed once, validated with clear ValueErrors.

Names compare case-insensitively (`nameSrvAddr`, `namesrv` are one option) and unknown ones are
refused with the valid list, so a typo fails at `.load()`. The results are frozen dataclasses of plain
values, pickled to the executors. Pure Python, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from orbitmq.protocol.sql92 import SqlParseError, compile_selector
from orbitmq.spark.offsets import LATEST, OffsetMap, from_offset_json

# Every option name, lower case, with its aliases mapped to the canonical name.
_SOURCE_ALIASES = {
    "namesrv": "namesrv",
    "namesrvaddr": "namesrv",
    "topic": "topic",
    "topics": "topics",
    "topicpattern": "topicpattern",
    "startingoffsets": "startingoffsets",
    "startingtimestamp": "startingtimestamp",
    "endingoffsets": "endingoffsets",
    "endingtimestamp": "endingtimestamp",
    "maxoffsetspertrigger": "maxoffsetspertrigger",
    "failondataloss": "failondataloss",
    "tags": "tags",
    "subexpression": "tags",
    "sqlfilter": "sqlfilter",
    "pullbatchsize": "pullbatchsize",
    "pulltimeoutms": "pulltimeoutms",
    "pullconcurrency": "pullconcurrency",
    "minpartitions": "minpartitions",
    "consumergroup": "consumergroup",
    "accesskey": "accesskey",
    "secretkey": "secretkey",
}
_SINK_ALIASES = {
    "namesrv": "namesrv",
    "namesrvaddr": "namesrv",
    "topic": "topic",
    "producergroup": "producergroup",
    "sendtimeoutms": "sendtimeoutms",
    "sendconcurrency": "sendconcurrency",
    "maxbatchmessages": "maxbatchmessages",
    "writeid": "writeid",
    "accesskey": "accesskey",
    "secretkey": "secretkey",
}
_SOURCE_NAMES = "namesrv (nameSrvAddr), topic | topics | topicPattern, startingOffsets, startingTimestamp, \
endingOffsets, endingTimestamp, maxOffsetsPerTrigger, failOnDataLoss, tags (subExpression), sqlFilter, \
pullBatchSize, pullTimeoutMs, pullConcurrency, minPartitions, consumerGroup, accessKey, secretKey"
_SINK_NAMES = "namesrv (nameSrvAddr), topic, producerGroup, sendTimeoutMs, sendConcurrency, \
maxBatchMessages, writeId, accessKey, secretKey"

DEFAULT_READER_GROUP = "orbitmq_spark_reader"
DEFAULT_PRODUCER_GROUP = "orbitmq_spark_writer"
_TOPIC_RE = re.compile(r"^[%|a-zA-Z0-9_-]{1,127}$")


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where reading starts or ends: "earliest", "latest", "timestamp" (ms) or "specific" offsets.

    With "specific", queues missing from `offsets` fall back to `fallback` (earliest for a start,
    latest for an end), and -2/-1 entries mean earliest/latest for that queue.
    """

    kind: str
    timestamp: int = 0
    offsets: OffsetMap = field(default_factory=dict)
    fallback: str = "earliest"

    def __post_init__(self) -> None:
        assert self.kind in ("earliest", "latest", "timestamp", "specific"), self.kind


@dataclass(frozen=True, slots=True)
class SourceOptions:
    namesrv: tuple[str, ...]
    """The nameserver address(es), `;` or `,` separated; required (also spelled nameSrvAddr)."""
    topics: tuple[str, ...] = ()
    """`topic`: one topic; `topics`: a comma-separated list. Exactly one of topic, topics and
    topicPattern."""
    topic_pattern: str | None = None
    """A regular expression the whole topic name matches (topics are listed from the nameservers)."""
    starting: OffsetSpec = OffsetSpec("earliest")
    """startingOffsets: earliest, latest or JSON {"topic": {"broker": {"queueId": offset}}} (-2
    earliest, -1 latest; queues not named start at earliest); startingTimestamp: epoch ms, each queue
    from its first message stored then or later. Default: latest for streams, earliest for batch
    reads. Used only when a query starts without a checkpoint."""
    ending: OffsetSpec = OffsetSpec("latest", fallback="latest")
    """Batch reads only. endingOffsets: latest or JSON (queues not named end at latest);
    endingTimestamp: epoch ms. Default: latest."""
    max_offsets_per_trigger: int | None = None
    """Streams only: at most this many messages per micro-batch, shared across queues by backlog
    (every queue with a backlog gets at least one)."""
    fail_on_data_loss: bool = True
    """Fail when messages the query still needs are gone (deleted by retention, a queue recreated);
    false: log it and go on from the earliest available offset."""
    tags: str = "*"
    """Broker-side tag filter, e.g. `TagA || TagB` (also spelled subExpression)."""
    sql_filter: str | None = None
    """A SQL92 selector the brokers evaluate (they need enablePropertyFilter=true); excludes tags."""
    pull_batch_size: int = 1024
    """Messages asked for per pull (the broker caps it)."""
    pull_timeout_ms: int = 10_000
    """Milliseconds one pull may take."""
    pull_concurrency: int = 8
    """Pulls in flight per Spark task."""
    min_partitions: int | None = None
    """Split large queue ranges so that at least this many Spark tasks read."""
    consumer_group: str | None = None
    """Report the committed offsets to this consumer group on the brokers, so consumerProgress shows
    the query's lag (monitoring only)."""
    credentials: tuple[str, str] | None = None
    """ACL account: accessKey and secretKey, both or neither; every request is signed."""

    @property
    def reader_group(self) -> str:
        return self.consumer_group or DEFAULT_READER_GROUP

    def matches(self, topic: str) -> bool:
        if self.topic_pattern is not None:
            return re.fullmatch(self.topic_pattern, topic) is not None
        return topic in self.topics


@dataclass(frozen=True, slots=True)
class SinkOptions:
    namesrv: tuple[str, ...]
    """The nameserver address(es), `;` or `,` separated; required (also spelled nameSrvAddr)."""
    topic: str | None = None
    """The topic of every row; unset: each row's `topic` column."""
    producer_group: str = DEFAULT_PRODUCER_GROUP
    """The producer group the sends are made in."""
    send_timeout_ms: int = 3000
    """Milliseconds one batch send may take."""
    send_concurrency: int = 8
    """Batches in flight per Spark task."""
    max_batch_messages: int = 1024
    """Rows per batch send at most."""
    write_id: str | None = None
    """Batch writes: part of every message id (UNIQ_KEY), so a retried task's duplicates carry the
    same ids; streams use the query id and batch id."""
    credentials: tuple[str, str] | None = None
    """ACL account: accessKey and secretKey, both or neither; every request is signed."""


# Options Spark itself sets on a data source (streaming writers get the query's checkpoint location).
_SPARK_OWN = frozenset({"checkpointlocation"})


def _normalize(
    options: Mapping[str, str], aliases: Mapping[str, str], names: str, what: str
) -> dict[str, str]:
    result: dict[str, str] = {}
    for raw_name, value in options.items():
        if raw_name.lower() in _SPARK_OWN:
            continue
        canonical = aliases.get(raw_name.lower())
        if canonical is None:
            if raw_name.lower() == "path":
                raise ValueError(f"the orbitmq {what} takes no path; set the option 'namesrv' instead")
            raise ValueError(f"unknown option {raw_name!r} for the orbitmq {what}; valid options: {names}")
        if canonical in result:
            raise ValueError(f"option {canonical!r} is given twice (under two of its names)")
        result[canonical] = str(value)
    return result


def parse_credentials(opts: Mapping[str, str]) -> tuple[str, str] | None:
    """accessKey + secretKey (both or neither) for a cluster with ACL on."""
    access, secret = opts.get("accesskey"), opts.get("secretkey")
    if not access and not secret:
        return None
    if not access or not secret:
        raise ValueError("options 'accessKey' and 'secretKey' go together: set both or neither")
    return access, secret


def parse_namesrv(value: str | None) -> tuple[str, ...]:
    if not value or not value.strip():
        raise ValueError(
            "option 'namesrv' (or 'nameSrvAddr') is required, e.g. .option('namesrv', '127.0.0.1:9876')"
        )
    addresses = tuple(a.strip() for a in re.split(r"[;,]", value) if a.strip())
    for address in addresses:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"namesrv address {address!r} is not host:port")
    return addresses


def parse_bool(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(f"option {name!r} must be true or false, got {value!r}")


def parse_int(name: str, value: str, *, minimum: int) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise ValueError(f"option {name!r} must be an integer, got {value!r}") from None
    if number < minimum:
        raise ValueError(f"option {name!r} must be >= {minimum}, got {number}")
    return number


def _check_topic(topic: str) -> str:
    if not _TOPIC_RE.match(topic):
        raise ValueError(f"topic {topic!r} is not a valid topic name (1-127 of letters, digits, '%|_-')")
    return topic


def _offset_spec(name: str, value: str, *, fallback: str, allow_earliest: bool) -> OffsetSpec:
    text = value.strip()
    lowered = text.lower()
    if lowered == "latest":
        return OffsetSpec("latest", fallback=fallback)
    if lowered == "earliest":
        if not allow_earliest:
            raise ValueError(f"option {name!r} cannot be 'earliest' (a range would be empty)")
        return OffsetSpec("earliest", fallback=fallback)
    if not text.startswith("{"):
        raise ValueError(
            f"option {name!r} must be 'earliest', 'latest' or JSON "
            f'{{"topic": {{"broker": {{"queueId": offset}}}}}}, got {value!r}'
        )
    offsets = from_offset_json(text, what=f"option {name!r}", allow_sentinels=True)
    if not allow_earliest and any(o == -2 for o in offsets.values()):
        raise ValueError(f"option {name!r} cannot use -2 (earliest) for a queue")
    return OffsetSpec("specific", offsets=offsets, fallback=fallback)


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validates the source options for a batch (`streaming=False`) or streaming query."""
    opts = _normalize(options, _SOURCE_ALIASES, _SOURCE_NAMES, "source")
    namesrv = parse_namesrv(opts.get("namesrv"))
    given = [n for n in ("topic", "topics", "topicpattern") if n in opts]
    if len(given) != 1:
        raise ValueError(
            "set exactly one of the options 'topic', 'topics' (comma-separated) or 'topicPattern' (a regex)"
            + (f"; got {', '.join(given)}" if given else "")
        )
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    if "topicpattern" in opts:
        pattern = opts["topicpattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"option 'topicPattern' is not a valid regular expression: {exc}") from None
    else:
        names = [t.strip() for t in opts[given[0]].split(",") if t.strip()]
        if not names:
            raise ValueError(f"option {given[0]!r} names no topic")
        if given[0] == "topic" and len(names) > 1:
            raise ValueError("option 'topic' takes one topic; use 'topics' for a comma-separated list")
        topics = tuple(dict.fromkeys(_check_topic(t) for t in names))

    if "startingoffsets" in opts and "startingtimestamp" in opts:
        raise ValueError("set only one of 'startingOffsets' and 'startingTimestamp'")
    if "startingtimestamp" in opts:
        starting = OffsetSpec(
            "timestamp", timestamp=parse_int("startingTimestamp", opts["startingtimestamp"], minimum=0)
        )
    elif "startingoffsets" in opts:
        starting = _offset_spec(
            "startingOffsets", opts["startingoffsets"], fallback="earliest", allow_earliest=True
        )
    else:
        # Kafka's defaults: a stream starts at the end, a batch reads everything.
        starting = OffsetSpec("latest" if streaming else "earliest")

    ending = OffsetSpec("latest", fallback="latest")
    if streaming:
        for batch_only in ("endingoffsets", "endingtimestamp"):
            if batch_only in opts:
                raise ValueError(f"option {batch_only!r} is for batch reads only (spark.read), not streams")
    else:
        if "maxoffsetspertrigger" in opts:
            raise ValueError("option 'maxOffsetsPerTrigger' is for streams only (spark.readStream)")
        if "endingoffsets" in opts and "endingtimestamp" in opts:
            raise ValueError("set only one of 'endingOffsets' and 'endingTimestamp'")
        if "endingtimestamp" in opts:
            ending = OffsetSpec(
                "timestamp",
                timestamp=parse_int("endingTimestamp", opts["endingtimestamp"], minimum=0),
                fallback="latest",
            )
        elif "endingoffsets" in opts:
            ending = _offset_spec(
                "endingOffsets", opts["endingoffsets"], fallback="latest", allow_earliest=False
            )
        if starting.kind == "latest":
            raise ValueError(
                "a batch read cannot start at 'latest' (it would be empty); use earliest or JSON"
            )
        if starting.kind == "specific" and any(o == LATEST for o in starting.offsets.values()):
            raise ValueError("a batch read cannot start a queue at -1 (latest)")

    max_rows = None
    if "maxoffsetspertrigger" in opts:
        max_rows = parse_int("maxOffsetsPerTrigger", opts["maxoffsetspertrigger"], minimum=1)
    min_partitions = None
    if "minpartitions" in opts:
        min_partitions = parse_int("minPartitions", opts["minpartitions"], minimum=1)
    tags = opts.get("tags", "*").strip() or "*"
    sql_filter = opts.get("sqlfilter")
    if sql_filter is not None:
        if tags != "*":
            raise ValueError("options 'tags' and 'sqlFilter' exclude each other: filter TAGS in the SQL")
        try:
            compile_selector(sql_filter)
        except SqlParseError as exc:
            raise ValueError(f"option 'sqlFilter': {exc}") from None
    group = opts.get("consumergroup")
    if group is not None and not _TOPIC_RE.match(group):
        raise ValueError(f"option 'consumerGroup' {group!r} is not a valid group name")
    return SourceOptions(
        namesrv=namesrv,
        topics=topics,
        topic_pattern=pattern,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=max_rows,
        fail_on_data_loss=parse_bool("failOnDataLoss", opts.get("failondataloss", "true")),
        tags=tags,
        sql_filter=sql_filter,
        pull_batch_size=parse_int("pullBatchSize", opts.get("pullbatchsize", "1024"), minimum=1),
        pull_timeout_ms=parse_int("pullTimeoutMs", opts.get("pulltimeoutms", "10000"), minimum=1),
        pull_concurrency=parse_int("pullConcurrency", opts.get("pullconcurrency", "8"), minimum=1),
        min_partitions=min_partitions,
        consumer_group=group,
        credentials=parse_credentials(opts),
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _normalize(options, _SINK_ALIASES, _SINK_NAMES, "sink")
    topic = opts.get("topic")
    if topic is not None:
        _check_topic(topic.strip())
    group = opts.get("producergroup", DEFAULT_PRODUCER_GROUP)
    if not _TOPIC_RE.match(group):
        raise ValueError(f"option 'producerGroup' {group!r} is not a valid group name")
    return SinkOptions(
        namesrv=parse_namesrv(opts.get("namesrv")),
        topic=topic.strip() if topic is not None else None,
        producer_group=group,
        send_timeout_ms=parse_int("sendTimeoutMs", opts.get("sendtimeoutms", "3000"), minimum=1),
        send_concurrency=parse_int("sendConcurrency", opts.get("sendconcurrency", "8"), minimum=1),
        max_batch_messages=parse_int("maxBatchMessages", opts.get("maxbatchmessages", "1024"), minimum=1),
        write_id=opts.get("writeid"),
        credentials=parse_credentials(opts),
    )
