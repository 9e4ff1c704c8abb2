"""Java properties text, the body of UPDATE_BROKER_CONFIG / GET_BROKER_CONFIG / *_NAMESRV_CONFIG
(fact sheet 4.11), sans-IO. Knows nothing of what the properties mean."""

from __future__ import annotations

from collections.abc import Mapping

from orbitmq.protocol.java_json import Buffer


def encode_properties_text(props: Mapping[str, object]) -> bytes:
    """`key=value\\n` lines as MixAll.properties2String writes them (values as their text)."""
    lines = []
    for key, value in props.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{key}={text}\n")
    return "".join(lines).encode()


def decode_properties_text(data: Buffer | str) -> dict[str, str]:
    """Parse Java properties text as java.util.Properties.load does: comments (#, !), `=`/`:`/blank
    separators, backslash escapes and line continuations."""
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            text = bytes(data).decode("latin-1")
    result: dict[str, str] = {}
    logical: list[str] = []
    continuing = False
    for raw_line in text.splitlines():
        line = raw_line.lstrip(" \t\f")
        if not continuing and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continuing = trailing % 2 == 1
        logical.append(line[:-1] if continuing else line)
        if continuing:
            continue
        key, value = _split_property("".join(logical))
        result[key] = value
        logical = []
    if logical:
        key, value = _split_property("".join(logical))
        result[key] = value
    return result


_PROPERTY_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _split_property(line: str) -> tuple[str, str]:
    key_chars: list[str] = []
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\" and i + 1 < len(line):
            key_chars.append(line[i : i + 2])
            i += 2
            continue
        if char in "=: \t\f":
            break
        key_chars.append(char)
        i += 1
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape("".join(key_chars)), _unescape(rest)


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_PROPERTY_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            if char != "\\":
                out.append(char)
            i += 1
    return "".join(out)
