"""The two header serializations of a remoting command written out (fact sheet 1.3, 1.4): fastjson's
JSON bean output and RocketMQ's binary ROCKETMQ header.

They take the command's fields rather than the command, so `command.py` (RemotingCommand, framing and
decoding) uses them without an import going back. Compiled with mypyc: every response passes here.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Final

import orjson

from orbitmq.protocol import java_json
from orbitmq.protocol.codes import LanguageCode

_BINARY_FIXED: Final = struct.Struct(">HBHIIi")
_EXT_KEY: Final = struct.Struct(">H")
_EXT_VALUE: Final = struct.Struct(">i")
_INT: Final = struct.Struct(">i")
_JSON_DUMPS: Final = orjson.dumps  # a static: no module attribute lookup per header

_LANGUAGE_NAME: Final = {code.value: code.name.encode() for code in LanguageCode}
_LANGUAGE_OTHER: Final = b"OTHER"

# fastjson's key order (alphabetical bean properties); extFields and remark only when present. Written
# from cached pieces (one per code, per flag and language, per version) and the opaque, which is cheaper
# than `bytes %` formatting the whole template (kept for flags and languages out of the caches' range).
_JSON_HEADER: Final = (
    b'{"code":%d%s,"flag":%d,"language":"%s","opaque":%d%s,"serializeTypeCurrentRPC":"JSON","version":%d}'
)
_CODE_PIECES: Final[dict[int, bytes]] = {}
_FLAG_LANGUAGE_PIECES: Final[dict[int, bytes]] = {}
_VERSION_PIECES: Final[dict[int, bytes]] = {}
_PIECES_MAX: Final = 1024  # per cache: codes, flags and versions are few; anything odd is not cached
_EXT_FIELDS_KEY: Final = b',"extFields":'
_REMARK_KEY: Final = b',"remark":'


def json_header(  # noqa: PLR0917 -- the command's fields, in its order
    code: int, language: int, version: int, opaque: int, flag: int, remark: str | None, ext: dict[str, str]
) -> bytes:
    """The JSON header of a command with these fields."""
    if not (0 <= flag < 0x10000 and 0 <= language < 0x100):
        return _JSON_HEADER % (
            code,
            _EXT_FIELDS_KEY + _JSON_DUMPS(ext) if ext else b"",
            flag,
            _LANGUAGE_NAME.get(language, _LANGUAGE_OTHER),
            opaque,
            _REMARK_KEY + _JSON_DUMPS(remark) if remark is not None else b"",
            version,
        )
    head = _CODE_PIECES.get(code)
    if head is None:
        head = _piece(_CODE_PIECES, code, b'{"code":' + str(code).encode())
    flag_language = (flag << 8) | language
    middle = _FLAG_LANGUAGE_PIECES.get(flag_language)
    if middle is None:
        middle = _piece(
            _FLAG_LANGUAGE_PIECES,
            flag_language,
            b',"flag":%d,"language":"%s","opaque":' % (flag, _LANGUAGE_NAME.get(language, _LANGUAGE_OTHER)),
        )
    tail = _VERSION_PIECES.get(version)
    if tail is None:
        tail = _piece(_VERSION_PIECES, version, b',"serializeTypeCurrentRPC":"JSON","version":%d}' % version)
    number = str(opaque).encode()
    if ext:
        if remark is None:
            return b"".join([head, _EXT_FIELDS_KEY, _JSON_DUMPS(ext), middle, number, tail])
        return b"".join(
            [
                head,
                _EXT_FIELDS_KEY,
                _JSON_DUMPS(ext),
                middle,
                number,
                _REMARK_KEY,
                _JSON_DUMPS(remark),
                tail,
            ]
        )
    if remark is None:
        return b"".join([head, middle, number, tail])
    return b"".join([head, middle, number, _REMARK_KEY, _JSON_DUMPS(remark), tail])


def _piece(cache: dict[int, bytes], key: int, piece: bytes) -> bytes:
    if len(cache) >= _PIECES_MAX:
        cache.clear()
    cache[key] = piece
    return piece


def binary_header(  # noqa: PLR0917 -- the command's fields, in its order
    code: int, language: int, version: int, opaque: int, flag: int, remark: str | None, ext: dict[str, str]
) -> bytes:
    """The ROCKETMQ header of a command with these fields."""
    remark_bytes = remark.encode() if remark else b""
    out = bytearray(
        _BINARY_FIXED.pack(
            code & 0xFFFF,
            language & 0xFF,
            version & 0xFFFF,
            opaque & 0xFFFFFFFF,
            flag & 0xFFFFFFFF,
            len(remark_bytes),
        )
    )
    out += remark_bytes
    ext_start = len(out)
    out += b"\0\0\0\0"  # ext length, filled in below
    key_length = _EXT_KEY.pack
    value_length = _EXT_VALUE.pack
    fields: Mapping[str, object] = ext  # callers may have put non-strings in
    for key, value in fields.items():
        if value is None:  # Java skips null entries
            continue
        key_bytes = key.encode()
        value_bytes = (value if isinstance(value, str) else ext_text(value)).encode()
        out += key_length(len(key_bytes))
        out += key_bytes
        out += value_length(len(value_bytes))
        out += value_bytes
    _INT.pack_into(out, ext_start, len(out) - ext_start - 4)
    return bytes(out)


def ext_text(value: object) -> str:
    """An ext field value (or key) that arrived as a JSON non-string, as Java would see it as a string."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 2**63 else repr(value)
    try:
        return java_json.dumps(value).decode()
    except (TypeError, ValueError):
        return str(value)
