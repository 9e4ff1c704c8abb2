"""The success answer to SEND_MESSAGE(_V2), encoded from a template (sans-IO).

Every stored send is answered with the same shape (msgId, queueId, queueOffset, transactionId when
given, then fields that change only with the broker's config), so `SendReply` keeps the per-answer
values as attributes and writes its header from bytes prepared once per `SendReplyTemplate` instead of
building an ext dict for the general encoder. The bytes are exactly what `encode_command` writes for
`reply.to_command()` (tests/unit/protocol/test_send_reply.py); any shape the template does not cover
goes to the general encoder. `SendReply.ext_fields` stays empty: read the fields with `to_command()`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

import orjson

from orbitmq.protocol.codes import RPC_TYPE, LanguageCode
from orbitmq.protocol.command import RemotingCommand

_BINARY_FIXED_NO_REMARK: Final = struct.Struct(">HBHIIiI")  # ...remark length 0, ext length
_KEY_LENGTH: Final = struct.Struct(">H")
_VALUE_LENGTH: Final = struct.Struct(">i")

_LANGUAGE_NAME: Final[dict[int, str]] = {code.value: code.name for code in LanguageCode}


def _json_plain(text: str) -> bool:
    """True if orjson writes `text` as itself between quotes (nothing escaped)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _binary_entry(key: str, value: bytes) -> bytes:
    key_bytes = key.encode()
    return _KEY_LENGTH.pack(len(key_bytes)) + key_bytes + _VALUE_LENGTH.pack(len(value)) + value


_MSG_ID_KEY: Final = _KEY_LENGTH.pack(5) + b"msgId"
_QUEUE_ID_KEY: Final = _KEY_LENGTH.pack(7) + b"queueId"
_QUEUE_OFFSET_KEY: Final = _KEY_LENGTH.pack(11) + b"queueOffset"
_TRANSACTION_ID_KEY: Final = _KEY_LENGTH.pack(13) + b"transactionId"


class SendReplyTemplate:
    """The parts of a send answer that only change with the broker's config, encoded once."""

    __slots__ = (
        "binary_tail",
        "constant_fields",
        "json_close",
        "json_code",
        "json_end",
        "json_flag",
        "json_language",
        "json_open",
        "json_tail",
        "json_version",
    )

    def __init__(self, constant_fields: Sequence[tuple[str, str]]) -> None:
        self.constant_fields: tuple[tuple[str, str], ...] = tuple(constant_fields)
        # ',"K":"V"' for each, as orjson writes a dict's entries (it escapes what JSON needs)
        self.json_tail = "".join(
            "," + orjson.dumps(key).decode() + ":" + orjson.dumps(value).decode()
            for key, value in self.constant_fields
        )
        self.binary_tail = b"".join(_binary_entry(key, value.encode()) for key, value in self.constant_fields)
        # The JSON header around the per-answer values, for the code, flag, language and version it was
        # last written with (the same for nearly every answer): three numbers formatted per answer, not six.
        self.json_code = 0
        self.json_flag = 0
        self.json_language = -1  # no language code: the first answer writes the frame
        self.json_version = 0
        self.json_open = ""
        self.json_close = ""
        self.json_end = ""

    def json_frame(self, code: int, flag: int, language: int, language_name: str, version: int) -> None:
        """Write the constant parts of the JSON header for these values."""
        self.json_open = f'{{"code":{code},"extFields":{{"msgId":"'
        self.json_close = f'{self.json_tail}}},"flag":{flag},"language":"{language_name}","opaque":'
        self.json_end = f',"serializeTypeCurrentRPC":"JSON","version":{version}}}'
        self.json_code = code
        self.json_flag = flag
        self.json_language = language
        self.json_version = version


class SendReply(RemotingCommand):
    """A send's answer whose ext fields live in attributes and are encoded from `template`."""

    __slots__ = ("msg_id", "queue_id", "queue_offset", "template", "transaction_id")

    def __init__(
        self,
        code: int,
        msg_id: str,
        queue_id: int,
        queue_offset: int,
        template: SendReplyTemplate,
        *,
        transaction_id: str | None = None,
    ) -> None:
        super().__init__(code, flag=RPC_TYPE)
        self.msg_id = msg_id
        self.queue_id = queue_id
        self.queue_offset = queue_offset
        self.template = template
        self.transaction_id = transaction_id

    def ext(self) -> dict[str, str]:
        """The ext fields as the general encoder would get them (this order is the wire order)."""
        ext = {"msgId": self.msg_id, "queueId": str(self.queue_id), "queueOffset": str(self.queue_offset)}
        if self.transaction_id is not None:
            ext["transactionId"] = self.transaction_id
        for key, value in self.template.constant_fields:
            ext[key] = value
        return ext

    def to_command(self) -> RemotingCommand:
        """The same answer as a general RemotingCommand (with its ext dict)."""
        return RemotingCommand(
            self.code,
            self.language,
            self.version,
            self.opaque,
            self.flag,
            self.remark,
            self.ext(),
            self.body,
            self.body_parts,
            self.serialize_type,
        )

    def _fields(self) -> tuple[object, ...]:
        return self.to_command()._fields()  # equal by value to the general command

    def json_header(self) -> bytes:
        msg_id = self.msg_id
        transaction_id = self.transaction_id
        if (
            self.remark is not None
            or not (msg_id.isalnum() or _json_plain(msg_id))
            or not (transaction_id is None or _json_plain(transaction_id))
        ):
            return self.to_command().json_header()
        t = self.template
        code = self.code
        flag = self.flag
        language = self.language
        version = self.version
        if (
            code != t.json_code
            or flag != t.json_flag
            or language != t.json_language
            or version != t.json_version
        ):
            name = _LANGUAGE_NAME.get(language)
            if name is None:
                return self.to_command().json_header()
            t.json_frame(code, flag, language, name, version)
        tx = "" if transaction_id is None else ',"transactionId":"' + transaction_id + '"'
        return (
            f'{t.json_open}{msg_id}","queueId":"{self.queue_id}","queueOffset":"{self.queue_offset}"'
            f"{tx}{t.json_close}{self.opaque}{t.json_end}"
        ).encode()

    def binary_header(self) -> bytes:
        if self.remark is not None:
            return self.to_command().binary_header()
        msg_id = self.msg_id.encode()
        queue_id = str(self.queue_id).encode()
        queue_offset = str(self.queue_offset).encode()
        tail = self.template.binary_tail
        value_length = _VALUE_LENGTH.pack
        ext = (
            _MSG_ID_KEY
            + value_length(len(msg_id))
            + msg_id
            + _QUEUE_ID_KEY
            + value_length(len(queue_id))
            + queue_id
            + _QUEUE_OFFSET_KEY
            + value_length(len(queue_offset))
            + queue_offset
        )
        if self.transaction_id is not None:
            transaction_id = self.transaction_id.encode()
            ext += _TRANSACTION_ID_KEY + value_length(len(transaction_id)) + transaction_id
        fixed = _BINARY_FIXED_NO_REMARK.pack(
            self.code & 0xFFFF,
            self.language & 0xFF,
            self.version & 0xFFFF,
            self.opaque & 0xFFFFFFFF,
            self.flag & 0xFFFFFFFF,
            0,
            len(ext) + len(tail),
        )
        return fixed + ext + tail
