"""The machinery behind typed custom headers: one declarative field spec, compiled codecs.

A header class lists its fields once, with their ext-field key, Java type and whether Java marks it
@CFNotNull:

    @header
    class GetMaxOffsetRequestHeader(Header):
        topic: str = S("topic")
        queue_id: int = I("queueId")
        broker_name: str | None = S("bname", default=None)

`@header` makes it a slotted dataclass and compiles `to_ext()` / `from_ext()` (and the `_v2` pair when
fields carry `v2=` short keys) into straight-line functions: they run on every request.

Rules (fact sheet section 3): values travel as strings; ints in decimal, booleans "true"/"false";
None fields are omitted. A missing required field raises HeaderError("the custom field X is null"),
a value Java's Integer/Long.parseInt would refuse raises HeaderError naming the field. Booleans parse
as Java's Boolean.parseBoolean does (only "true", any case, is true; "0"/"1" are false). Holds no
header definitions itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self, TypeVar, dataclass_transform

from orbitmq.common.errors import OrbitError
from orbitmq.protocol.java_values import parse_boolean


class HeaderError(OrbitError):
    """A custom header is missing a required field or has a malformed value."""


_KIND_STR = "S"
_KIND_INT = "I"  # Java int / Integer: 32-bit
_KIND_LONG = "L"  # Java long / Long: 64-bit
_KIND_BOOL = "B"

_RANGES = {_KIND_INT: (-(2**31), 2**31 - 1), _KIND_LONG: (-(2**63), 2**63 - 1)}


def _spec(kind: str, key: str, default: Any, required: bool | None, v2: str | None) -> Any:
    if required is None:
        required = default is dataclasses.MISSING
    metadata = {"key": key, "kind": kind, "required": required, "v2": v2}
    return dataclasses.field(default=default, metadata=metadata)


def S(  # the Java type letters of the fact sheet's tables
    key: str, *, default: Any = dataclasses.MISSING, required: bool | None = None, v2: str | None = None
) -> Any:
    """A String field."""
    return _spec(_KIND_STR, key, default, required, v2)


def I(  # noqa: E743
    key: str, *, default: Any = dataclasses.MISSING, required: bool | None = None, v2: str | None = None
) -> Any:
    """An int/Integer field (32-bit)."""
    return _spec(_KIND_INT, key, default, required, v2)


def L(
    key: str, *, default: Any = dataclasses.MISSING, required: bool | None = None, v2: str | None = None
) -> Any:
    """A long/Long field (64-bit)."""
    return _spec(_KIND_LONG, key, default, required, v2)


def B(
    key: str, *, default: Any = dataclasses.MISSING, required: bool | None = None, v2: str | None = None
) -> Any:
    """A boolean/Boolean field."""
    return _spec(_KIND_BOOL, key, default, required, v2)


class Header:
    """Base of every typed header; `@header` replaces these methods with compiled ones."""

    __slots__ = ()
    EXT_KEYS: ClassVar[tuple[str, ...]] = ()
    EXT_KEYS_V2: ClassVar[tuple[str, ...]] = ()

    def to_ext(self) -> dict[str, str]:
        raise NotImplementedError(f"{type(self).__name__} is not decorated with @header")

    @classmethod
    def from_ext(cls, ext: Mapping[str, str]) -> Self:
        raise NotImplementedError(f"{cls.__name__} is not decorated with @header")


def _to_int(raw: object, key: str, low: int, high: int) -> int:
    text = raw if isinstance(raw, str) else str(raw)
    # the shape Java's Integer/Long.parseInt accepts (java_values): sign, decimal digits, nothing else
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not digits.isdecimal():
        raise HeaderError(f"the custom field {key} is not a number: {raw!r}")
    value = int(text)
    if not low <= value <= high:
        raise HeaderError(f"the custom field {key} is out of range: {raw!r}")
    return value


def _to_bool(raw: object) -> bool:
    return parse_boolean(raw if isinstance(raw, str) else str(raw))


def _missing(key: str) -> HeaderError:
    return HeaderError(f"the custom field {key} is null")


H = TypeVar("H", bound=type[Header])


def _compile(cls: type[Header], which: str) -> tuple[Callable[..., Any], Callable[..., Any], tuple[str, ...]]:
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    namespace: dict[str, Any] = {"_to_int": _to_int, "_to_bool": _to_bool, "_missing": _missing}
    decode = ["def from_ext(cls, ext):", "    get = ext.get"]
    encode = ["def to_ext(self):", "    ext = {}"]
    keys: list[str] = []
    args: list[str] = []
    for n, f in enumerate(fields):
        meta = f.metadata
        key = meta.get(which) or meta["key"]
        kind = meta["kind"]
        keys.append(key)
        var = f"v{n}"
        args.append(var)
        decode.append(f"    {var} = get({key!r})")
        if meta["required"]:
            decode.append(f"    if {var} is None: raise _missing({key!r})")
            convert_prefix = "    "
        else:
            namespace[f"_default{n}"] = f.default
            decode.append(f"    if {var} is None: {var} = _default{n}")
            convert_prefix = "    else: "
        if kind in _RANGES:
            low, high = _RANGES[kind]
            decode.append(f"{convert_prefix}{var} = _to_int({var}, {key!r}, {low}, {high})")
        elif kind == _KIND_BOOL:
            decode.append(f"{convert_prefix}{var} = _to_bool({var})")
        encode.append(f"    v = self.{f.name}")
        if kind == _KIND_STR:
            encode.append(f"    if v is not None: ext[{key!r}] = v")
        elif kind == _KIND_BOOL:
            encode.append(f"    if v is not None: ext[{key!r}] = 'true' if v else 'false'")
        else:
            encode.append(f"    if v is not None: ext[{key!r}] = str(v)")
    decode.append(f"    return cls({', '.join(args)})")
    encode.append("    return ext")
    # straight-line code per class, generated from the spec above (as dataclasses does for __init__)
    exec("\n".join(decode) + "\n\n" + "\n".join(encode), namespace)
    return namespace["to_ext"], namespace["from_ext"], tuple(keys)


_SUFFIX = {"key": "", "v2": "_v2"}


def _install(cls: Any, which: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Compile `cls`'s codec pair for `which` keys and put it on the class in place of the stubs."""
    to_ext, from_ext, _ = _compile(cls, which)
    suffix = _SUFFIX[which]
    setattr(cls, "to_ext" + suffix, to_ext)
    setattr(cls, "from_ext" + suffix, classmethod(from_ext))
    return to_ext, from_ext


def _lazy_codecs(which: str) -> tuple[Callable[..., Any], classmethod[Any, Any, Any]]:
    """Stubs that compile the real codecs on first use (then the class holds those): `orbitmq serve`
    defines ~60 header classes at start-up and uses a handful before it serves."""

    def to_ext(self: Any) -> dict[str, str]:
        encode = _install(type(self), which)[0]
        result: dict[str, str] = encode(self)
        return result

    def from_ext(cls: Any, ext: Mapping[str, str]) -> Any:
        return _install(cls, which)[1](cls, ext)

    return to_ext, classmethod(from_ext)


@dataclass_transform(field_specifiers=(S, I, L, B))
def header(cls: H) -> H:
    """Make a `Header` subclass a slotted dataclass with compiled ext-field codecs (compiled on first
    use; the ext keys are known at once)."""
    dc: Any = dataclasses.dataclass(slots=True)(cls)
    fields = dataclasses.fields(dc)
    dc.to_ext, dc.from_ext = _lazy_codecs("key")
    dc.EXT_KEYS = tuple(f.metadata["key"] for f in fields)
    if any(f.metadata.get("v2") for f in fields):
        dc.to_ext_v2, dc.from_ext_v2 = _lazy_codecs("v2")
        dc.EXT_KEYS_V2 = tuple(f.metadata.get("v2") or f.metadata["key"] for f in fields)
    return dc  # type: ignore[no-any-return]
