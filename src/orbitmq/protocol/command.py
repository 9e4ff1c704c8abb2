"""RemotingCommand and its two header serializations (fact sheet 1.2-1.5), sans-IO.

A frame as `FrameDecoder` yields it (length prefix stripped):

    +-----------------------------+--------------------+------+
    | type (1 byte) | hdr len (3) | header (hdr len)   | body |
    +-----------------------------+--------------------+------+

JSON header (type 0): fastjson's bean output, keys alphabetical, nulls omitted:
    {"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":3,
     "serializeTypeCurrentRPC":"JSON","version":407}

ROCKETMQ header (type 1), big-endian:
    code short | language byte | version short | opaque int | flag int |
    remark length int | remark | ext length int | (key length short, key, value length int, value)*

Decoding is lenient where real peers differ (ext values as JSON numbers/booleans from the JavaScript
client, unknown languages, duplicate ext keys: last wins) and strict where the bytes cannot be
understood: anything wrong raises `RemoteProtocolError`, never another exception. This module knows
nothing about sockets, connections or what a request code means.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

import orjson

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.protocol import java_json
from orbitmq.protocol.codes import CURRENT_VERSION, RPC_ONEWAY, RPC_TYPE, LanguageCode, SerializeType
from orbitmq.protocol.header_encode import binary_header, ext_text, json_header
from orbitmq.protocol.java_values import INT_MAX, INT_MIN

Buffer: TypeAlias = bytes | bytearray | memoryview

# Final (literal values): compiled, a Final constant is inlined or a C static, not a module dict lookup.
_SERIALIZE_JSON: Final[int] = SerializeType.JSON
_SERIALIZE_ROCKETMQ: Final[int] = SerializeType.ROCKETMQ
_LANGUAGE_JAVA: Final[int] = LanguageCode.JAVA
_LANGUAGE_OTHER_CODE: Final[int] = LanguageCode.OTHER

_opaque_counter: Final = itertools.count()


def next_opaque() -> int:
    """A fresh request id: a process-wide counter from 0, wrapping within the positive int range."""
    return next(_opaque_counter) & 0x7FFFFFFF


# Statics (compiled: a builtin or a module's function is otherwise looked up at every use).
_MEMORYVIEW: Final = memoryview


def _nbytes(data: Buffer) -> int:
    return data.nbytes if isinstance(data, _MEMORYVIEW) else len(data)


class RemotingCommand:
    """One request or response. `ext_fields` is the "custom header": every value a string.

    A plain class with an explicit `__init__` (not a dataclass): compiled with mypyc, a dataclass's
    generated `__init__` stays interpreted, and two commands are built per request (decoded request and
    response). Equality is by value over every field, as the dataclass had."""

    __slots__ = (
        "body",
        "body_parts",
        "code",
        "ext_fields",
        "flag",
        "language",
        "opaque",
        "remark",
        "serialize_type",
        "version",
    )

    def __init__(  # noqa: PLR0917 -- positional as the dataclass was (decode_command passes seven)
        self,
        code: int,
        language: int = LanguageCode.PYTHON,
        version: int = CURRENT_VERSION,
        opaque: int = 0,
        flag: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: Buffer = b"",
        # When set, these are sent instead of `body`, each as its own write (zero-copy pull replies).
        body_parts: list[Buffer] | None = None,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> None:
        self.code = code
        self.language = language
        self.version = version
        self.opaque = opaque
        self.flag = flag
        self.remark = remark
        self.ext_fields: dict[str, str] = {} if ext_fields is None else ext_fields
        self.body = body
        self.body_parts = body_parts
        self.serialize_type = serialize_type

    def _fields(self) -> tuple[object, ...]:
        return (
            self.code,
            self.language,
            self.version,
            self.opaque,
            self.flag,
            self.remark,
            self.ext_fields,
            self.body,
            self.body_parts,
            self.serialize_type,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemotingCommand):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as the dataclass was)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: Buffer = b"",
        *,
        oneway: bool = False,
    ) -> RemotingCommand:
        fields = dict(ext_fields) if ext_fields else {}
        flag = RPC_ONEWAY if oneway else 0
        if cls is RemotingCommand:  # compiled, a direct construction; `cls(...)` is a generic keyword call
            return RemotingCommand(code, opaque=next_opaque(), flag=flag, ext_fields=fields, body=body)
        return cls(code, opaque=next_opaque(), flag=flag, ext_fields=fields, body=body)

    @classmethod
    def response(
        cls,
        code: int,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: Buffer = b"",
    ) -> RemotingCommand:
        """A response; its opaque and serialize type are set by `response_to(request)`."""
        fields = dict(ext_fields) if ext_fields else {}
        if cls is RemotingCommand:  # (as in `request`)
            return RemotingCommand(code, flag=RPC_TYPE, remark=remark, ext_fields=fields, body=body)
        return cls(code, flag=RPC_TYPE, remark=remark, ext_fields=fields, body=body)

    def response_to(self, request: RemotingCommand) -> RemotingCommand:
        """Make this the answer to `request` (same opaque and header serialization); returns self."""
        self.opaque = request.opaque
        self.serialize_type = request.serialize_type
        self.flag |= RPC_TYPE
        return self

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_TYPE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    @property
    def body_length(self) -> int:
        if self.body_parts is not None:
            return sum(_nbytes(part) for part in self.body_parts)
        return _nbytes(self.body)

    def body_bytes(self) -> bytes:
        """The body as `bytes` (copies only when it is not `bytes` already)."""
        if self.body_parts is not None:
            return b"".join(self.body_parts)
        body = self.body
        return body if isinstance(body, bytes) else bytes(body)

    # The header encoders, as methods so that a subclass with a fixed shape (protocol/send_reply.py's
    # SendReply) can write its header from a template instead.
    def json_header(self) -> bytes:
        return json_header(
            self.code, self.language, self.version, self.opaque, self.flag, self.remark, self.ext_fields
        )

    def binary_header(self) -> bytes:
        return binary_header(
            self.code, self.language, self.version, self.opaque, self.flag, self.remark, self.ext_fields
        )

    def __repr__(self) -> str:
        kind = "response" if self.flag & RPC_TYPE else "request"
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque} flag={self.flag} "
            f"language={self.language} version={self.version} remark={self.remark!r} "
            f"ext_fields={self.ext_fields!r} body_length={self.body_length} "
            f"serialize_type={SerializeType(self.serialize_type).name})"
        )


# ------------------------------------------------------------------ encoding

_PREFIX: Final = struct.Struct(">iI")
_INT: Final = struct.Struct(">i")
_LANGUAGE_BY_NAME: Final[dict[str, int]] = {code.name: code for code in LanguageCode}
_LANGUAGE_BY_CODE: Final[dict[int, int]] = {code.value: code for code in LanguageCode}


def encode_command(cmd: RemotingCommand) -> list[Buffer]:
    """The frame as pieces for `writelines`: length prefix + header in one piece, then the body
    (or every body part) as given, never copied."""
    if cmd.serialize_type == _SERIALIZE_ROCKETMQ:
        header = cmd.binary_header()
        type_bits = _SERIALIZE_ROCKETMQ << 24
    else:
        header = cmd.json_header()
        type_bits = 0
    header_length = len(header)
    if header_length > 0xFFFFFF:
        raise ValueError(f"header of {header_length} bytes does not fit a remoting frame")
    parts = cmd.body_parts
    if parts is not None:
        body_length = sum(_nbytes(part) for part in parts)
        pieces: list[Buffer] = [
            _PREFIX.pack(4 + header_length + body_length, type_bits | header_length) + header
        ]
        pieces += parts
        return pieces
    body = cmd.body
    body_length = _nbytes(body)
    prefix = _PREFIX.pack(4 + header_length + body_length, type_bits | header_length) + header
    return [prefix, body] if body_length else [prefix]


def encode_command_bytes(cmd: RemotingCommand) -> bytes:
    """The whole frame (with its length prefix) as one `bytes`."""
    return b"".join(encode_command(cmd))


# ------------------------------------------------------------------ decoding


def _int_field(obj: Mapping[str, Any], name: str, default: int) -> int:
    value = obj.get(name, default)
    if type(value) is not int:
        if value is None:
            return default
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise RemoteProtocolError(f"header field {name} is not an integer: {value!r}") from None
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise RemoteProtocolError(f"header field {name} is not an integer: {value!r}")
    if not INT_MIN <= value <= INT_MAX:
        raise RemoteProtocolError(f"header field {name} out of int range: {value}")
    return value


_JSON_LOADS: Final = orjson.loads  # a static: no module attribute lookup per header


def _decode_json_header(header: bytes, max_ext_fields: int) -> RemotingCommand:
    lenient = False
    try:
        # (`header` is bytes: orjson reads a memoryview more slowly than the copy costs)
        parsed = _JSON_LOADS(header)
    except orjson.JSONDecodeError:
        parsed = _lenient_json(header)
        lenient = True
    if type(parsed) is not dict:
        raise RemoteProtocolError("JSON header is not an object")
    # typed, so that compiled the reads below are dict calls (a bound `get` kept in a local is not)
    obj: dict[str, Any] = parsed
    code = obj.get("code", 0)
    version = obj.get("version", 0)
    opaque = obj.get("opaque", 0)
    flag = obj.get("flag", 0)
    # the common case: four ints in range; anything else goes the careful way
    if not (
        type(code) is int
        and type(version) is int
        and type(opaque) is int
        and type(flag) is int
        and INT_MIN <= code <= INT_MAX
        and INT_MIN <= version <= INT_MAX
        and INT_MIN <= opaque <= INT_MAX
        and INT_MIN <= flag <= INT_MAX
    ):
        code = _int_field(obj, "code", 0)
        version = _int_field(obj, "version", 0)
        opaque = _int_field(obj, "opaque", 0)
        flag = _int_field(obj, "flag", 0)
    language = obj.get("language")
    if type(language) is str:
        language = _LANGUAGE_BY_NAME.get(language, _LANGUAGE_OTHER_CODE)
    elif language is None:
        language = _LANGUAGE_JAVA
    else:
        language = _int_field(obj, "language", _LANGUAGE_JAVA)
    remark = obj.get("remark")
    if remark is not None and type(remark) is not str:
        remark = ext_text(remark)
    ext = obj.get("extFields")
    if ext is None:
        ext = {}
    elif type(ext) is not dict:
        raise RemoteProtocolError("JSON header extFields is not an object")
    else:
        if len(ext) > max_ext_fields:
            raise RemoteProtocolError(f"{len(ext)} extFields exceed the limit {max_ext_fields}")
        # numbers/booleans from JavaScript clients; odd keys only from fastjson-lenient text (orjson's
        # keys are strings: its values alone are checked, without an item tuple each)
        for value in ext.values():
            if type(value) is not str:
                lenient = True
                break
        if lenient and not all(type(k) is str and type(v) is str for k, v in ext.items()):
            ext = {ext_text(k): ext_text(v) for k, v in ext.items() if v is not None}
    return RemotingCommand(code, language, version, opaque, flag, remark, ext)


# The lenient reader is pure Python (about 0.5 s per MB): only headers of a size real peers send get it.
MAX_LENIENT_HEADER_SIZE: Final = 64 * 1024
DEFAULT_MAX_EXT_FIELDS: Final = 1024
_MIN_EXT_ENTRY: Final = 6  # key length (2) + value length (4)


def _lenient_json(header: bytes) -> object:
    # Java peers may send what fastjson accepts (single quotes, unquoted keys): rare, so only after
    # orjson failed.
    if len(header) > MAX_LENIENT_HEADER_SIZE:
        raise RemoteProtocolError(f"broken JSON header of {len(header)} bytes")
    try:
        return java_json.loads(header)
    except ValueError as exc:
        raise RemoteProtocolError(f"broken JSON header: {exc}") from None


_BINARY_FIXED_SIGNED: Final = struct.Struct(">hbhiii")


def _decode_binary_header(header: bytes, max_ext_fields: int) -> RemotingCommand:
    size = len(header)
    if size < 17:
        raise RemoteProtocolError(f"ROCKETMQ header too short: {size} bytes")
    # (declared ints: unpack_from's values are untyped, and compiled, untyped arithmetic is a generic
    # Python operation)
    code: int
    language: int
    version: int
    opaque: int
    flag: int
    remark_length: int
    code, language, version, opaque, flag, remark_length = _BINARY_FIXED_SIGNED.unpack_from(header, 0)
    language = _LANGUAGE_BY_CODE.get(language & 0xFF, language & 0xFF)
    if remark_length < 0 or 17 + remark_length + 4 > size:
        raise RemoteProtocolError(f"bad remark length {remark_length} in ROCKETMQ header")
    pos = 17
    remark = None
    if remark_length:
        # Java decodes with replacement characters; so do we (never a UnicodeDecodeError)
        remark = str(header[pos : pos + remark_length], "utf-8", "replace")
        pos += remark_length
    ext_length: int
    (ext_length,) = _INT.unpack_from(header, pos)
    pos += 4
    end = pos + ext_length
    if ext_length < 0 or end > size:
        raise RemoteProtocolError(f"bad extFields length {ext_length} in ROCKETMQ header")
    ext: dict[str, str] = {}
    if ext_length:
        ext = _decode_ext_map(header[pos:end], max_ext_fields)
    return RemotingCommand(
        code, language, version, opaque, flag, remark, ext, serialize_type=SerializeType.ROCKETMQ
    )


def _decode_ext_map(data: bytes, max_ext_fields: int) -> dict[str, str]:
    """RocketMQSerializable's ext map: (key length short, key, value length int, value)*, UTF-8.

    Every request of a client using the ROCKETMQ serialization (Apache's benchmark Producer, for one)
    passes here, a dozen entries each, so the loop allocates only what it returns: lengths are read
    byte by byte (no struct tuples), and an all-ASCII block (nearly always) is decoded once and sliced
    as text (no bytes slice and codec call per entry; one-letter keys come from CPython's cache).
    """
    ext: dict[str, str] = {}
    end = len(data)
    text = data.decode("ascii") if data.isascii() else ""
    pos = 0
    # Only a block long enough to hold more entries than allowed pays for counting them.
    counting = end > _MIN_EXT_ENTRY * max_ext_fields
    while pos < end:
        if counting and len(ext) >= max_ext_fields:
            raise RemoteProtocolError(f"extFields exceed the limit {max_ext_fields}")
        if pos + 2 > end:
            raise RemoteProtocolError("truncated extFields key length")
        key_length = (data[pos] << 8) | data[pos + 1]
        pos += 2
        if key_length >= 0x8000 or pos + key_length + 4 > end:
            signed = key_length - 0x10000 if key_length >= 0x8000 else key_length
            raise RemoteProtocolError(f"bad extFields key length {signed}")
        key = text[pos : pos + key_length] if text else str(data[pos : pos + key_length], "utf-8", "replace")
        pos += key_length
        value_length = (data[pos] << 24) | (data[pos + 1] << 16) | (data[pos + 2] << 8) | data[pos + 3]
        pos += 4
        if value_length >= 0x80000000 or pos + value_length > end:
            signed = value_length - 0x100000000 if value_length >= 0x80000000 else value_length
            raise RemoteProtocolError(f"bad extFields value length {signed}")
        if text:
            ext[key] = text[pos : pos + value_length]
        else:
            ext[key] = str(data[pos : pos + value_length], "utf-8", "replace")
        pos += value_length
    return ext


_WORD: Final = struct.Struct(">I")
# A body up to this size is copied out of a `bytes` frame rather than viewed: the copy costs less than
# creating and slicing a memoryview (larger bodies, pulls of many messages, stay views).
_BODY_COPY_MAX: Final = 8192


def decode_command(frame: Buffer, max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS) -> RemotingCommand:
    """Decode one frame (as `FrameDecoder.feed` yields it). The body is a memoryview into `frame`, or
    for a `bytes` frame and a body of at most 8 KiB, a `bytes` copy. More than `max_ext_fields` ext
    fields is a protocol error (serverMaxExtFields)."""
    if type(frame) is bytes:
        # What the frame decoder yields: read with native byte reads and slices, no memoryview.
        data: bytes = frame
        size = len(data)
        if size < 4:
            raise RemoteProtocolError(f"frame of {size} bytes has no header length")
        serialize_type = data[0]
        header_length = (data[1] << 16) | (data[2] << 8) | data[3]
        header_end = 4 + header_length
        if header_end > size:
            raise RemoteProtocolError(f"header length {header_length} exceeds frame of {size} bytes")
        cmd = _decode_header(serialize_type, data[4:header_end], max_ext_fields)
        if header_end < size:
            if size - header_end <= _BODY_COPY_MAX:
                cmd.body = data[header_end:]
            else:
                cmd.body = _MEMORYVIEW(data)[header_end:]
        return cmd
    view = _MEMORYVIEW(frame)
    size = view.nbytes
    if size < 4:
        raise RemoteProtocolError(f"frame of {size} bytes has no header length")
    word: int = _WORD.unpack_from(view, 0)[0]  # (typed: the shifts and compares below are native)
    header_length = word & 0xFFFFFF
    header_end = 4 + header_length
    if header_end > size:
        raise RemoteProtocolError(f"header length {header_length} exceeds frame of {size} bytes")
    cmd = _decode_header(word >> 24, view[4:header_end].tobytes(), max_ext_fields)
    if header_end < size:
        cmd.body = view[header_end:]
    return cmd


def _decode_header(serialize_type: int, header: bytes, max_ext_fields: int) -> RemotingCommand:
    if serialize_type == _SERIALIZE_JSON:
        return _decode_json_header(header, max_ext_fields)
    if serialize_type == _SERIALIZE_ROCKETMQ:
        return _decode_binary_header(header, max_ext_fields)
    raise RemoteProtocolError(f"unknown serialize type {serialize_type}")
