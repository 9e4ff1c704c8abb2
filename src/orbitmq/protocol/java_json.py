"""JSON as Java's fastjson reads and writes it (fact sheet 4.1, 4.9, 4.12), sans-IO.

Reading (`loads`): standard JSON goes through orjson; on failure a small lenient parser accepts what
fastjson emits or tolerates: unquoted map keys (`{0:"addr"}` -> int key 0, `{topic:"T"}` -> "topic"),
objects as map keys (`{{"brokerName":"b","queueId":0,"topic":"T"}:5}` -> `ObjectKey` key), single-quoted
strings, `\\x` escapes and trailing commas. Every failure is a `JavaJsonError` (a ValueError).

Writing (`dumps`): standard JSON, non-string scalar keys written as strings (`{"0":"addr"}`, which
Java peers always accept); maps keyed by objects (`ObjectKey`) are written as fastjson does, with the
object itself as the key, because Java has no other way to read them back.
`dumps_pretty` writes fastjson's PrettyFormat (newline + TAB indent, no space after `:`, non-string
keys unquoted and kept on the line of the `{`), the shape of RocketMQ's store/config/*.json files.

Callers build plain values (dict/list/str/int/float/bool/None/ObjectKey); bean property order and
omitting nulls are theirs to do (fastjson: alphabetical, nulls omitted). This module knows nothing
about RocketMQ's body types.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeAlias

import orjson

Buffer: TypeAlias = bytes | bytearray | memoryview


class JavaJsonError(ValueError):
    """The text is not JSON, not even as fastjson understands it."""


class ObjectKey(tuple[tuple[str, Any], ...]):
    """A JSON object used as a map key (fastjson writes e.g. MessageQueue keys this way).

    Hashable and canonical: the properties are kept sorted by name, nested objects and arrays frozen.
    """

    __slots__ = ()

    @classmethod
    def of(cls, mapping: Mapping[str, Any]) -> ObjectKey:
        return cls(sorted((str(k), _freeze(v)) for k, v in mapping.items()))

    def as_dict(self) -> dict[str, Any]:
        return dict(self)

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self:
            if key == name:
                return value
        return default


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return ObjectKey.of(value)
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


# ------------------------------------------------------------------ reading

_MAX_DEPTH = 200
_WS = re.compile(r"[ \t\n\r\f\v]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?[LlFfDd]?")
_IDENT = re.compile(r"[A-Za-z_$][\w$.\-]*")
_PLAIN_DOUBLE = re.compile(r'[^"\\]*')
_PLAIN_SINGLE = re.compile(r"[^'\\]*")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = {"true": True, "false": False, "null": None}


def loads(data: Buffer | str) -> Any:
    """Parse JSON as fastjson would: orjson first, the lenient parser only when that fails."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JavaJsonError(f"not UTF-8: {exc}") from None
    parser = _Parser(text)
    value = parser.value(0)
    parser.skip_ws()
    if parser.pos != len(text):
        raise JavaJsonError(f"unexpected text after the JSON value at {parser.pos}")
    return value


class _Parser:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_ws(self) -> None:
        match = _WS.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def fail(self, what: str) -> JavaJsonError:
        return JavaJsonError(f"{what} at offset {self.pos}")

    def peek(self) -> str:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of JSON")
        return self.text[self.pos]

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise self.fail("JSON nested too deeply")
        char = self.peek()
        if char == "{":
            return self.object(depth + 1)
        if char == "[":
            return self.array(depth + 1)
        if char in "\"'":
            return self.string(char)
        if char == "-" or char.isdigit():
            return self.number()
        match = _IDENT.match(self.text, self.pos)
        if match is not None and match.group() in _LITERALS:
            self.pos = match.end()
            return _LITERALS[match.group()]
        raise self.fail(f"unexpected character {char!r}")

    def number(self) -> int | float:
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.fail("bad number")
        self.pos = match.end()
        literal = match.group().rstrip("LlFfDd")
        if match.group(1) is None and match.group(2) is None:
            return int(literal)
        return float(literal)

    def string(self, quote: str) -> str:
        text = self.text
        pos = self.pos + 1
        plain = _PLAIN_DOUBLE if quote == '"' else _PLAIN_SINGLE
        chunks: list[str] = []
        while True:
            match = plain.match(text, pos)
            assert match is not None
            chunks.append(match.group())
            pos = match.end()
            if pos >= len(text):
                self.pos = pos
                raise self.fail("unterminated string")
            char = text[pos]
            if char == quote:
                self.pos = pos + 1
                return _fix_surrogates("".join(chunks))
            # a backslash escape
            if pos + 1 >= len(text):
                self.pos = pos
                raise self.fail("unterminated escape")
            escape = text[pos + 1]
            if escape in _ESCAPES:
                chunks.append(_ESCAPES[escape])
                pos += 2
            elif escape in "ux":
                width = 4 if escape == "u" else 2
                digits = text[pos + 2 : pos + 2 + width]
                if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                    self.pos = pos
                    raise self.fail("bad escape")
                chunks.append(chr(int(digits, 16)))
                pos += 2 + width
            else:
                self.pos = pos
                raise self.fail(f"bad escape \\{escape}")

    def key(self, depth: int) -> Any:
        char = self.peek()
        if char in "\"'":
            return self.string(char)
        if char == "{":
            return ObjectKey.of(self.object(depth + 1))
        if char == "[":
            return tuple(_freeze(v) for v in self.array(depth + 1))
        if char == "-" or char.isdigit():
            return self.number()
        match = _IDENT.match(self.text, self.pos)
        if match is None:
            raise self.fail(f"bad object key starting {char!r}")
        self.pos = match.end()
        word = match.group()
        return _LITERALS.get(word, word) if word in _LITERALS else word

    def object(self, depth: int) -> dict[Any, Any]:
        if depth > _MAX_DEPTH:
            raise self.fail("JSON nested too deeply")
        self.pos += 1  # {
        result: dict[Any, Any] = {}
        while True:
            char = self.peek()
            if char == "}":
                self.pos += 1
                return result
            if char == ",":  # fastjson tolerates stray commas
                self.pos += 1
                continue
            key = self.key(depth)
            if self.peek() != ":":
                raise self.fail("expected ':'")
            self.pos += 1
            result[key] = self.value(depth)
            char = self.peek()
            if char == ",":
                self.pos += 1
            elif char != "}":
                raise self.fail("expected ',' or '}'")

    def array(self, depth: int) -> list[Any]:
        if depth > _MAX_DEPTH:
            raise self.fail("JSON nested too deeply")
        self.pos += 1  # [
        result: list[Any] = []
        while True:
            char = self.peek()
            if char == "]":
                self.pos += 1
                return result
            if char == ",":
                self.pos += 1
                continue
            result.append(self.value(depth))
            char = self.peek()
            if char == ",":
                self.pos += 1
            elif char != "]":
                raise self.fail("expected ',' or ']'")


_SURROGATES = re.compile("[\ud800-\udfff]")


def _fix_surrogates(text: str) -> str:
    # \uD83D\uDE00 escapes arrive as two code points; join pairs, replace lone halves (as Java's
    # UTF-8 encoder would) so the string can always be encoded again.
    if _SURROGATES.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# ------------------------------------------------------------------ writing

_OPTIONS = orjson.OPT_NON_STR_KEYS


def dumps(value: Any, *, string_keys: bool = True) -> bytes:
    """Compact JSON. With `string_keys` (the default) int keys are written as strings (`{"0":"a"}`,
    standard JSON that Java peers always accept); without it, as fastjson's default encoder writes
    them (`{0:"a"}`). `ObjectKey` keys are always written in fastjson's object-key form."""
    if string_keys:
        try:
            return orjson.dumps(value, option=_OPTIONS)
        except TypeError:
            pass  # an ObjectKey (tuple) key: orjson refuses it
    out: list[str] = []
    _write(value, out, None, string_keys)
    return "".join(out).encode()


def dumps_pretty(value: Any) -> bytes:
    """fastjson PrettyFormat: what RocketMQ writes to store/config/*.json."""
    out: list[str] = []
    _write(value, out, 0, False)
    return "".join(out).encode()


def _scalar(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        raise TypeError(f"cannot write {type(value).__name__} as JSON") from None


def _write(value: Any, out: list[str], indent: int | None, string_keys: bool) -> None:
    if isinstance(value, ObjectKey):
        value = value.as_dict()
    if isinstance(value, dict):
        _write_map(value, out, indent, string_keys)
    elif isinstance(value, list | tuple | set | frozenset):
        items = list(value)
        if not items:
            out.append("[]")
            return
        out.append("[")
        inner = None if indent is None else indent + 1
        for i, item in enumerate(items):
            if i:
                out.append(",")
            if inner is not None:
                out.append("\n" + "\t" * inner)
            _write(item, out, inner, string_keys)
        if indent is not None:
            out.append("\n" + "\t" * indent)
        out.append("]")
    else:
        out.append(_scalar(value))


def _write_map(mapping: Mapping[Any, Any], out: list[str], indent: int | None, string_keys: bool) -> None:
    out.append("{")
    inner = None if indent is None else indent + 1
    first = True
    for key, item in mapping.items():
        if not first:
            out.append(",")
        first = False
        if isinstance(key, str):
            if inner is not None:
                out.append("\n" + "\t" * inner)
            out.append(_scalar(key))
        elif isinstance(key, ObjectKey):
            # fastjson writes the key object in place, and in the pretty form (its own lines)
            _write_map(key.as_dict(), out, inner, string_keys)
        elif string_keys:
            out.append(_scalar(_key_text(key)))
        else:
            # fastjson writes other non-string keys unquoted, on the same line
            out.append(_key_text(key))
        out.append(":")
        _write(item, out, inner, string_keys)
    if indent is not None and not first:
        out.append("\n" + "\t" * indent)
    out.append("}")


def _key_text(key: Any) -> str:
    if key is True:
        return "true"
    if key is False:
        return "false"
    if isinstance(key, int):
        return str(int(key))
    return _scalar(key)
