"""docs/configuration.md from the config classes: `python -m orbitmq.config_doc > docs/configuration.md`.

Each setting is a field of a class in `SECTIONS` (the one list to edit); its description is the
attribute docstring after the field, read with `ast`. tests/unit/test_configuration_doc.py fails when a
setting has no description or two, or when the committed page differs from this output.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.acl.plain_config import PlainAccount, PlainAclConfig
from orbitmq.broker.config import MINIMUMS, ROCKETMQ_BROKER_KEYS, BrokerConfig, broker_key
from orbitmq.client.config import ClientConfig
from orbitmq.client.options import LitePullConsumerOptions, ProducerOptions, PushConsumerOptions
from orbitmq.controller.config import CONTROLLER_CONFIG_KEYS, ControllerConfig
from orbitmq.namesrv.config import ROCKETMQ_NAMESRV_KEYS, NamesrvConfig, namesrv_key
from orbitmq.spark.options import SinkOptions, SourceOptions
from orbitmq.store.config import STORE_KINDS, StoreConfig
from orbitmq.transport.limits import LIMIT_KEYS, ServerLimits
from orbitmq.transport.tls import TlsClientSettings, TlsServerSettings

BROKER_CONF = "broker.conf"
NAMESRV_CONF = "namesrv.conf"


@dataclass(frozen=True)
class Documented:
    """One class whose fields are settings."""

    cls: type
    key: Callable[[str], str | None]
    """Field name -> the key a user writes (None: the field is not a setting)."""
    minimum: Callable[[str], int | None] = lambda key: None
    """The least value a key takes, where the code refuses less."""


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    scope: frozenset[str]
    """Where the keys are written (a file, or a client's constructor): a key is described once per scope."""
    classes: tuple[Documented, ...]
    rocketmq: Callable[[str, str], str | None]
    """(key, description) -> RocketMQ's name of the setting, where it has one."""
    python_values: bool = False
    """Defaults shown as Python values (True, None) rather than as properties text (true, unset)."""
    options_text: bool = False
    """Values are written as text (Spark options): the type column says how the text is read."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _same_name(names: frozenset[str]) -> Callable[[str, str], str | None]:
    return lambda key, _doc: key if key in names else None


_TRAILING_NAME = re.compile(r"\(([a-z][A-Za-z0-9.]*(?:/[A-Za-z0-9]+)?)\)\.?$")


def _named_in_doc(_key: str, doc: str) -> str | None:
    """The client's docstrings end with RocketMQ's field name in parentheses: "... (sendMsgTimeout)"."""
    found = _TRAILING_NAME.search(doc)
    return found.group(1) if found else None


def _key_among(keys: Iterable[str]) -> Callable[[str], str | None]:
    """Field name -> the key of `keys` it spells in snake_case (checkCRCOnRecover: check_crc_on_recover)."""
    by_letters = {key.lower(): key for key in keys}
    return lambda attr: by_letters.get(attr.replace("_", "").lower())


def _mapped(table: Mapping[str, str]) -> Callable[[str], str | None]:
    return table.get


_TLS_SERVER = {
    "mode": "tls.server.mode",
    "cert_path": "tls.server.certPath",
    "key_path": "tls.server.keyPath",
    "key_password": "tls.server.keyPassword",
    "trust_cert_path": "tls.server.trustCertPath",
    "need_client_auth": "tls.server.need.client.auth",
}
_TLS_CLIENT = {
    "enable": "tls.enable",
    "auth_server": "tls.client.authServer",
    "trust_cert_path": "tls.client.trustCertPath",
    "cert_path": "tls.client.certPath",
    "key_path": "tls.client.keyPath",
    "key_password": "tls.client.keyPassword",
}
_LIMITS = {attr: key for key, attr in LIMIT_KEYS.items()}
_ACL_ACCOUNT = {
    name: _camel(name)
    for name in (
        "access_key",
        "secret_key",
        "white_remote_address",
        "admin",
        "default_topic_perm",
        "default_group_perm",
        "topic_perms",
        "group_perms",
    )
}
_SPARK_SOURCE = {
    "namesrv": "namesrv",
    "topics": "topic, topics",
    "topic_pattern": "topicPattern",
    "starting": "startingOffsets, startingTimestamp",
    "ending": "endingOffsets, endingTimestamp",
    "max_offsets_per_trigger": "maxOffsetsPerTrigger",
    "fail_on_data_loss": "failOnDataLoss",
    "tags": "tags",
    "sql_filter": "sqlFilter",
    "pull_batch_size": "pullBatchSize",
    "pull_timeout_ms": "pullTimeoutMs",
    "pull_concurrency": "pullConcurrency",
    "min_partitions": "minPartitions",
    "consumer_group": "consumerGroup",
    "credentials": "accessKey, secretKey",
}
_SPARK_SINK = {
    "namesrv": "namesrv",
    "topic": "topic",
    "producer_group": "producerGroup",
    "send_timeout_ms": "sendTimeoutMs",
    "send_concurrency": "sendConcurrency",
    "max_batch_messages": "maxBatchMessages",
    "write_id": "writeId",
    "credentials": "accessKey, secretKey",
}
_BOTH_SERVERS = frozenset({BROKER_CONF, NAMESRV_CONF})

# The registry: every class whose fields are settings, by where they are written. Add a class here.


def _keywords_section(title: str, cls: type, intro: str) -> Section:
    """A section of a client class's Python keyword arguments: the field names are the keys."""
    return Section(
        f"{title} ({cls.__name__})",
        intro,
        frozenset({cls.__name__}),
        (Documented(cls, lambda name: name),),
        _named_in_doc,
        python_values=True,
    )


def _options_section(title: str, cls: type, users: str) -> Section:
    """The options of a producer or consumer class, taken as keywords or as one options object."""
    intro = f"Keyword arguments of {users} (asyncio and blocking), or one `options={cls.__name__}(...)`."
    return _keywords_section(title, cls, intro)


SECTIONS: tuple[Section, ...] = (
    Section(
        "Broker (broker.conf)",
        "`orbitmq broker -c broker.conf` and `orbitmq serve -c broker.conf` read these Java-properties keys; "
        "a RocketMQ broker.conf works unchanged. Keys neither orbitmq nor RocketMQ knows get a warning.",
        frozenset({BROKER_CONF}),
        (Documented(BrokerConfig, broker_key, MINIMUMS.get),),
        _same_name(ROCKETMQ_BROKER_KEYS),
    ),
    Section(
        "Store (broker.conf)",
        "The message store's keys, in the same broker.conf (RocketMQ's MessageStoreConfig).",
        frozenset({BROKER_CONF}),
        (Documented(StoreConfig, _key_among(STORE_KINDS)),),
        _same_name(ROCKETMQ_BROKER_KEYS),
    ),
    Section(
        "Per-request limits (broker.conf and namesrv.conf)",
        "orbitmq's own bounds on what one client can make a server do; each must be at least 1.",
        _BOTH_SERVERS,
        (Documented(ServerLimits, _mapped(_LIMITS), lambda _key: 1),),
        _same_name(frozenset()),
    ),
    Section(
        "TLS (broker.conf and namesrv.conf)",
        "RocketMQ's TlsSystemConfig keys. The server keys hold for both servers; the client keys for the "
        "broker's own connections (to nameservers and its master).",
        _BOTH_SERVERS,
        (
            Documented(TlsServerSettings, _mapped(_TLS_SERVER)),
            Documented(TlsClientSettings, _mapped(_TLS_CLIENT)),
        ),
        lambda key, _doc: key,
    ),
    Section(
        "NameServer (namesrv.conf)",
        "`orbitmq namesrv -c namesrv.conf` reads these keys (RocketMQ's NamesrvConfig and NettyServerConfig "
        "names); `orbitmq serve` derives its nameserver's from broker.conf.",
        frozenset({NAMESRV_CONF}),
        (Documented(NamesrvConfig, namesrv_key),),
        _same_name(ROCKETMQ_NAMESRV_KEYS),
    ),
    Section(
        "Controller (controller.conf, or namesrv.conf with enableControllerInNamesrv=true)",
        "`orbitmq controller -c controller.conf` reads these keys (RocketMQ 5's ControllerConfig names); a "
        "nameserver with `enableControllerInNamesrv=true` takes the same keys from namesrv.conf.",
        frozenset({"controller.conf"}),
        (Documented(ControllerConfig, _key_among(CONTROLLER_CONFIG_KEYS)),),
        lambda key, doc: None if doc.startswith("orbitmq's own") else key,
    ),
    Section(
        "ACL accounts (plain_acl.yml)",
        "The file named by aclFile when aclEnable=true: `globalWhiteRemoteAddresses` and a list `accounts`, "
        "each with the keys below (RocketMQ 4.x's format).",
        frozenset({"plain_acl.yml"}),
        (
            Documented(PlainAclConfig, _mapped({"global_white_addresses": "globalWhiteRemoteAddresses"})),
            Documented(PlainAccount, _mapped(_ACL_ACCOUNT)),
        ),
        lambda key, _doc: key,
    ),
    _keywords_section(
        "Client instance",
        ClientConfig,
        "What every producer and consumer of one client instance shares: `ClientConfig(...)` keyword "
        "arguments, passed as `config=`.",
    ),
    _options_section("Producer options", ProducerOptions, "`Producer` and `TransactionProducer`"),
    _options_section("Push consumer options", PushConsumerOptions, "`PushConsumer`"),
    _options_section("Lite pull consumer options", LitePullConsumerOptions, "`LitePullConsumer`"),
    Section(
        "Spark source options",
        '`spark.read.format("orbitmq").option(KEY, VALUE)` (and readStream); names are case-insensitive.',
        frozenset({"spark source"}),
        (Documented(SourceOptions, _mapped(_SPARK_SOURCE)),),
        lambda _key, _doc: None,
        options_text=True,
    ),
    Section(
        "Spark sink options",
        '`df.write.format("orbitmq").option(KEY, VALUE)` (and writeStream); names are case-insensitive.',
        frozenset({"spark sink"}),
        (Documented(SinkOptions, _mapped(_SPARK_SINK)),),
        lambda _key, _doc: None,
        options_text=True,
    ),
)


@dataclass(frozen=True)
class Setting:
    section: Section
    cls: type
    attr: str
    key: str
    type: str
    default: str
    doc: str | None
    minimum: int | None


def attribute_docs(cls: type) -> dict[str, tuple[ast.AnnAssign, str | None]]:
    """Field name -> (its annotated assignment, the string literal right after it or None), inherited
    fields included (a subclass that declares a field again describes it anew)."""
    found: dict[str, tuple[ast.AnnAssign, str | None]] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            found.update(_own_attribute_docs(klass))
    return found


def _own_attribute_docs(cls: type) -> dict[str, tuple[ast.AnnAssign, str | None]]:
    tree = ast.parse(inspect.getsource(inspect.getmodule(cls) or cls))
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None)
    if node is None:
        raise LookupError(f"class {cls.__qualname__} not found in its module's source")
    found: dict[str, tuple[ast.AnnAssign, str | None]] = {}
    body = node.body
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            after = body[i + 1] if i + 1 < len(body) else None
            doc = None
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                text = after.value.value
                doc = " ".join(inspect.cleandoc(text).split()) if isinstance(text, str) else None
            found[stmt.target.id] = (stmt, doc)
    return found


def settings(sections: Iterable[Section] = SECTIONS) -> list[Setting]:
    out: list[Setting] = []
    for section in sections:
        for documented in section.classes:
            docs = attribute_docs(documented.cls)
            for f in dataclasses.fields(documented.cls):
                key = documented.key(f.name)
                if key is None:
                    continue
                stmt, doc = docs[f.name]
                default = _default_text(f, stmt, python=section.python_values)
                out.append(
                    Setting(
                        section,
                        documented.cls,
                        f.name,
                        key,
                        ast.unparse(stmt.annotation),
                        default,
                        doc,
                        documented.minimum(key),
                    )
                )
    return out


def problems(sections: Iterable[Section] = SECTIONS) -> list[str]:
    """Settings without a description, and keys described more than once where they are written."""
    found: list[str] = []
    described: dict[tuple[str, str], list[Setting]] = {}
    for setting in settings(sections):
        for scope in setting.section.scope:
            described.setdefault((scope, setting.key), [])
            if setting.doc:
                described[scope, setting.key].append(setting)
    for (scope, key), where in sorted(described.items()):
        names = ", ".join(f"{s.cls.__name__}.{s.attr}" for s in where)
        if not where:
            found.append(f"{scope} {key}: no description (an attribute docstring after the field)")
        elif len(where) > 1:
            found.append(f"{scope} {key}: described twice ({names}); keep one docstring")
    return found


def render(sections: Iterable[Section] = SECTIONS) -> str:
    sections = tuple(sections)
    rows = [s for s in settings(sections) if s.doc]
    lines = [
        "# Configuration reference",
        "",
        "Every setting of the servers, the client and the Spark connector: key, type, default, what it",
        "does, and RocketMQ's name where RocketMQ has the setting (— where it is orbitmq's own).",
        "Generated from the config classes' attribute docstrings by",
        "`python -m orbitmq.config_doc > docs/configuration.md`; edit those, not this page.",
        "",
    ]
    lines += [f"- [{section.title}](#{_anchor(section.title)})" for section in sections]
    for section in sections:
        lines += ["", f"## {section.title}", "", section.intro, ""]
        lines += ["| key | type | default | RocketMQ | description |", "|---|---|---|---|---|"]
        for row in (r for r in rows if r.section is section):
            doc = row.doc or ""
            rocketmq = section.rocketmq(row.key, doc)
            if section.rocketmq is _named_in_doc and (named := _TRAILING_NAME.search(doc)):
                doc = doc[: named.start()].rstrip() + "."  # the name is in its own column
            if row.minimum is not None:
                doc += f" At least {row.minimum}."
            cells = (
                f"`{row.key}`",
                f"`{_text_type(row.type) if section.options_text else row.type}`",
                row.default,
                "same" if rocketmq == row.key else f"`{rocketmq}`" if rocketmq else "—",
                _markdown_text(doc),
            )
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def _markdown_text(text: str) -> str:
    """`text` with the characters Markdown would read as emphasis or HTML escaped outside code spans."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts are outside backticks
        parts[i] = parts[i].replace("*", "\\*").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _text_type(annotation: str) -> str:
    """How an option's text is read, from the parsed field's annotation."""
    if annotation.startswith("int"):
        return "integer"
    if annotation.startswith("bool"):
        return "boolean"
    return "string"


def _default_text(f: dataclasses.Field[Any], stmt: ast.AnnAssign, *, python: bool) -> str:
    if f.default is not dataclasses.MISSING:
        value: object = f.default
    elif f.default_factory is not dataclasses.MISSING:
        if f.default_factory not in (list, dict, tuple):
            return "computed (see description)"
        value = f.default_factory()
    else:
        return "required"
    source = ast.unparse(stmt.value) if stmt.value is not None else ""
    if isinstance(value, int) and not isinstance(value, bool) and re.fullmatch(r"[\d_ *]+", source):
        return f"`{source}`" if "*" in source else f"`{value}`"  # 16 * 1024 * 1024 reads better
    if not isinstance(value, (str, int, float, list, tuple, dict, enum.Enum)) and value is not None:
        return "see description"
    text = _value_text(value, python=python)
    return "unset" if text is None else f"`{text}`"


def _value_text(value: object, *, python: bool) -> str | None:
    """The value as a user writes it, None for "not set"."""
    if isinstance(value, enum.Enum):
        value = value.value
    if python:
        return repr(value)
    if value is None or (isinstance(value, (str, list, tuple, dict)) and not value):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    found = problems()
    if found:
        print("\n".join(found), file=sys.stderr)
        return 1
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
