"""The properties string of a record and of send headers (fact sheet 5.3).

Layout: `name U+0001 value U+0002 name U+0001 value ...` (the final U+0002 is left out; an empty map is
the empty string). Decoding splits on U+0002 and keeps a segment only when it holds a U+0001 with a
non-empty name before it and a non-empty value after it (the first U+0001 splits); anything else is
dropped silently, as RocketMQ's MessageDecoder does, so a trailing U+0002 (as some clients write) is
harmless. Later duplicates win.

Pure string functions; nothing here knows about records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

NAME_VALUE_SEPARATOR: Final = "\x01"
PROPERTY_SEPARATOR: Final = "\x02"


def encode_properties(props: Mapping[str, str | None]) -> str:
    """The properties string of `props`; entries whose value is None are left out (as Java does)."""
    return "\x02".join([f"{name}\x01{value}" for name, value in props.items() if value is not None])


def decode_properties(s: str) -> dict[str, str]:
    """The property map of a properties string; malformed segments are dropped, never an error."""
    result: dict[str, str] = {}
    if not s:
        return result
    for segment in s.split("\x02"):
        name, _, value = segment.partition("\x01")
        if name and value:
            result[name] = value
    return result


def join_properties(own: str, extra: str) -> str:
    """`own` followed by `extra` as one properties string (how a broker appends batch-level properties).

    A separator is inserted only when `own` is non-empty and does not already end with one.
    """
    if not extra:
        return own
    if own and not own.endswith("\x02"):
        return f"{own}\x02{extra}"
    return own + extra


def find_property(text: str, name: str) -> str | None:
    """The value `decode_properties(text).get(name)` gives, found with two string searches instead of a
    dict of every property (the last non-empty occurrence wins, as there)."""
    return find_property_key(text, "\x02" + name + "\x01")


def find_property_key(text: str, key: str) -> str | None:
    """`find_property` with its search key "\x02NAME\x01" made by the caller (the send path keeps them as
    constants: no two string concatenations per lookup)."""
    end = len(text)
    while True:
        i = text.rfind(key, 0, end)
        if i < 0:
            start = len(key) - 1 if text.startswith(key[1:]) else -1
            if start < 0:
                return None
        else:
            start = i + len(key)
        stop = text.find("\x02", start)
        value = text[start:] if stop < 0 else text[start:stop]
        if value or i < 0:
            return value or None
        end = i  # an empty value is dropped by decode_properties: look further left
