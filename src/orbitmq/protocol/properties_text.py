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


def escape_property(text: str, *, is_key: bool) -> str:
    """Escape a key or value so Properties.load reads it back unchanged (as Properties.store does, but
    keeping non-ASCII as UTF-8): a value can never start a new line, whatever it holds."""
    out: list[str] = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[char])
        elif char == " " and (is_key or i == 0):
            out.append("\\ ")
        elif char in "=:#!" and (is_key or i == 0):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def rewrite_properties_text(text: str, updates: Mapping[str, str]) -> str:
    """`text` with each key of `updates` set to its new value: an existing entry (every one, if the key
    is repeated) is replaced where it stands, other keys are appended; comments, blank lines and the
    other entries are kept as written."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    done: set[str] = set()
    i = 0
    while i < len(lines):
        first = i
        stripped = lines[i].lstrip(" \t\f")
        if not stripped.strip() or stripped[0] in "#!":
            out.append(lines[i])
            i += 1
            continue
        logical = [stripped.rstrip("\r\n")]
        # a logical line continues while it ends in an odd number of backslashes
        while (len(logical[-1]) - len(logical[-1].rstrip("\\"))) % 2 == 1 and i + 1 < len(lines):
            logical[-1] = logical[-1][:-1]
            i += 1
            logical.append(lines[i].lstrip(" \t\f").rstrip("\r\n"))
        i += 1
        key, _ = _split_property("".join(logical))
        if key in updates:
            out.append(f"{escape_property(key, is_key=True)}={escape_property(updates[key], is_key=False)}\n")
            done.add(key)
        else:
            out.extend(lines[first:i])
    rest = [k for k in updates if k not in done]
    if rest and out and not out[-1].endswith("\n"):
        out.append("\n")
    for key in rest:
        out.append(f"{escape_property(key, is_key=True)}={escape_property(updates[key], is_key=False)}\n")
    return "".join(out)
