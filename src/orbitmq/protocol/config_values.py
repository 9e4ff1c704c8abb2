"""Config file values (broker.conf, namesrv.conf, UPDATE_*_CONFIG bodies) read as RocketMQ reads them,
but refusing what RocketMQ would silently ignore. Sans-IO.

RocketMQ copies properties onto its config objects with MixAll.properties2Object: the value is trimmed
(Java's String.trim: every char <= U+0020 at either end), then parsed by the setter's type with Java's
parsers (Integer.parseInt, Long.parseLong, Double.parseDouble, Boolean.parseBoolean; strings as they
are). Enum setters (flushDiskType, brokerRole) take the exact constant name. Where Java throws, RocketMQ
swallows the error and keeps the default, so `flushDiskType=SYNCFLUSH` silently means ASYNC_FLUSH; here
such a value is an error naming the key, the value and what is allowed.

The kind of each key comes from a table (`ConfigKind`), so adding a key is adding a row.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from orbitmq.protocol.java_values import parse_boolean, parse_int, parse_long


class ConfigValueError(ValueError):
    """A config value Java's parser (or the enum) would not accept; the message names the key."""


def java_trim(text: str) -> str:
    """Java's String.trim: strip every character <= U+0020 (spaces, tabs, control chars) at both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


# Double.parseDouble's decimal grammar (ASCII digits only, unlike parseInt): sign, digits with an
# optional point, optional exponent, optional float/double suffix; NaN and Infinity by name.
_JAVA_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")


def parse_double(text: str) -> float:
    """Java's Double.parseDouble (decimal forms; it trims whitespace itself)."""
    body = java_trim(text)
    if not _JAVA_DOUBLE.fullmatch(body):
        raise ValueError(f"for input string: {text[:64]!r}")
    return float(body[:-1] if body[-1] in "fFdD" else body)


@dataclass(frozen=True, slots=True)
class ConfigKind:
    """How one key's text becomes a value: `parse` raises ValueError on text Java would refuse."""

    name: str
    parse: Callable[[str], object]
    choices: tuple[str, ...] = ()


def _string(text: str) -> str:
    return text


def _boolean(text: str) -> bool:
    return parse_boolean(text)


STRING = ConfigKind("string", _string)
OPTIONAL_STRING = ConfigKind("string", lambda text: text or None)
INT = ConfigKind("int", parse_int)
LONG = ConfigKind("long", parse_long)
DOUBLE = ConfigKind("double", parse_double)
BOOLEAN = ConfigKind("boolean", _boolean)


def enum_kind(*choices: str) -> ConfigKind:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"not one of {', '.join(choices)}")
        return text

    return ConfigKind("enum", parse, choices)


FLUSH_DISK_TYPE = enum_kind("ASYNC_FLUSH", "SYNC_FLUSH")
BROKER_ROLE = enum_kind("ASYNC_MASTER", "SYNC_MASTER", "SLAVE")


def kind_of_annotation(annotation: object) -> ConfigKind:
    """The kind for a dataclass field annotation (string annotations, as `from __future__` leaves them).
    Integers parse as Java longs: orbitmq keeps one int type, and the long range never refuses a value
    an int field of RocketMQ accepts."""
    text = str(annotation).replace(" ", "")
    kinds = {
        "bool": BOOLEAN,
        "int": LONG,
        "float": DOUBLE,
        "str": STRING,
        "str|None": OPTIONAL_STRING,
    }
    try:
        return kinds[text]
    except KeyError:
        raise TypeError(f"no config kind for annotation {annotation!r}") from None


def parse_value(key: str, raw: str, kind: ConfigKind) -> object:
    """`raw` trimmed as properties2Object trims, then parsed as `kind`; ConfigValueError names the key."""
    text = java_trim(raw)
    try:
        return kind.parse(text)
    except ValueError as exc:
        expected = {
            "int": "an integer (Java Integer.parseInt: digits with an optional sign, no spaces or '_')",
            "long": "an integer (Java Long.parseLong: digits with an optional sign, no spaces or '_')",
            "double": "a decimal number (Java Double.parseDouble)",
        }.get(kind.name)
        why = str(exc) if kind.name == "enum" else f"expected {expected or kind.name}"
        raise ConfigValueError(f"{key}={raw!r}: {why}") from None


def boolean_warning(key: str, raw: str) -> str | None:
    """Boolean.parseBoolean reads anything but "true" as false: say so when the text was not a boolean."""
    text = java_trim(raw).lower()
    if text in ("true", "false"):
        return None
    return f"{key}={raw!r} is read as false (only 'true', in any case, is true)"


def did_you_mean(key: str, known: Iterable[str]) -> str | None:
    """The closest known key to a misspelled one (case-insensitive), or None."""
    by_lower: dict[str, str] = {}
    for name in known:
        by_lower.setdefault(name.lower(), name)
    exact = by_lower.get(key.lower())
    if exact is not None:
        return exact
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.8)
    return by_lower[close[0]] if close else None


def unknown_key_warning(key: str, used: Collection[str], rocketmq_keys: Collection[str], where: str) -> str:
    """One line for a key orbitmq does not act on: a RocketMQ key it ignores, or a likely typo."""
    if key in rocketmq_keys:
        return f"{where}: {key} is a RocketMQ key orbitmq does not use (ignored)"
    suggestion = did_you_mean(key, used)
    hint = f" (did you mean {suggestion}?)" if suggestion else ""
    return f"{where}: unknown key {key}{hint}, ignored"


# RocketMQ's TLS keys (transport/tls.py reads them from the config's extra properties): known to the
# broker and the nameserver alike, so they get no "unknown key" warning.
TLS_KEYS = frozenset(
    {
        "tls.server.mode",
        "tls.server.certPath",
        "tls.server.keyPath",
        "tls.server.keyPassword",
        "tls.server.need.client.auth",
        "tls.server.trustCertPath",
        "tls.enable",
        "tls.client.authServer",
        "tls.client.certPath",
        "tls.client.keyPath",
        "tls.client.keyPassword",
        "tls.client.trustCertPath",
    }
)
