"""RemotingCommand golden bytes (fact sheet 1.1-1.5) and lenient decoding."""

import struct

import pytest

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.protocol.codes import LanguageCode, SerializeType
from orbitmq.protocol.command import (
    RemotingCommand,
    decode_command,
    encode_command,
    encode_command_bytes,
    next_opaque,
)

EXAMPLE_REQUEST = (
    b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":3,'
    b'"serializeTypeCurrentRPC":"JSON","version":407}'
)
EXAMPLE_RESPONSE = (
    b'{"code":0,"flag":1,"language":"JAVA","opaque":3,"serializeTypeCurrentRPC":"JSON","version":407}'
)


def json_frame(header: bytes, body: bytes = b"") -> bytes:
    """Frame by the table in 1.1: length, (type 0 << 24 | header length), header, body."""
    return struct.pack(">i", 4 + len(header) + len(body)) + struct.pack(">i", len(header)) + header + body


def test_json_request_golden() -> None:
    cmd = RemotingCommand(105, language=LanguageCode.JAVA, version=407, opaque=3, ext_fields={"topic": "T"})
    assert encode_command_bytes(cmd) == json_frame(EXAMPLE_REQUEST)
    decoded = decode_command(json_frame(EXAMPLE_REQUEST)[4:])
    assert decoded == cmd
    assert decoded.serialize_type == SerializeType.JSON


def test_json_response_golden() -> None:
    cmd = RemotingCommand(0, language=LanguageCode.JAVA, opaque=3, flag=1)
    assert encode_command_bytes(cmd) == json_frame(EXAMPLE_RESPONSE)
    decoded = decode_command(json_frame(EXAMPLE_RESPONSE, b"hello")[4:])
    assert decoded.is_response and not decoded.is_oneway
    assert decoded.opaque == 3 and decoded.code == 0 and decoded.remark is None
    assert bytes(decoded.body) == b"hello"


def test_json_remark_and_control_characters_escaped() -> None:
    cmd = RemotingCommand(1, language=LanguageCode.JAVA, opaque=7, flag=1, remark='bad "x"\x01')
    header = (
        b'{"code":1,"flag":1,"language":"JAVA","opaque":7,"remark":"bad \\"x\\"\\u0001",'
        b'"serializeTypeCurrentRPC":"JSON","version":407}'
    )
    assert encode_command_bytes(cmd) == json_frame(header)
    assert decode_command(json_frame(header)[4:]).remark == 'bad "x"\x01'


def test_json_header_pieces_in_every_combination() -> None:
    # the header is written from cached pieces: each field where fastjson puts it, cached or not
    both = RemotingCommand(
        17, language=LanguageCode.PYTHON, version=9, opaque=-5, flag=3, remark="r", ext_fields={"k": "v"}
    )
    expected = (
        b'{"code":17,"extFields":{"k":"v"},"flag":3,"language":"PYTHON","opaque":-5,"remark":"r",'
        b'"serializeTypeCurrentRPC":"JSON","version":9}'
    )
    for _ in range(2):  # pieces made, then pieces reused
        assert encode_command_bytes(both) == json_frame(expected)
    both.opaque = 123456789012
    assert encode_command_bytes(both) == json_frame(expected.replace(b":-5,", b":123456789012,"))
    # a flag out of the cached range (and an unknown language code) take the template
    odd = RemotingCommand(1, language=200, version=1, opaque=1, flag=0x12345, ext_fields={"k": "v"})
    assert encode_command_bytes(odd) == json_frame(
        b'{"code":1,"extFields":{"k":"v"},"flag":74565,"language":"OTHER","opaque":1,'
        b'"serializeTypeCurrentRPC":"JSON","version":1}'
    )
    assert decode_command(encode_command_bytes(odd)[4:]).flag == 0x12345


def binary_header_by_table(
    *,
    code: int,
    language: int,
    version: int,
    opaque: int,
    flag: int,
    remark: bytes,
    ext: list[tuple[bytes, bytes]],
) -> bytes:
    """The ROCKETMQ header exactly as the table in 1.4 lays it out."""
    area = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in ext)
    return (
        struct.pack(">h", code)
        + struct.pack(">b", language)
        + struct.pack(">h", version)
        + struct.pack(">i", opaque)
        + struct.pack(">i", flag)
        + struct.pack(">i", len(remark))
        + remark
        + struct.pack(">i", len(area))
        + area
    )


def test_rocketmq_binary_golden() -> None:
    header = binary_header_by_table(
        code=310,
        language=0,
        version=407,
        opaque=42,
        flag=0,
        remark=b"",
        ext=[(b"a", b"group"), (b"b", b"TopicA")],
    )
    expected = (
        struct.pack(">i", 4 + len(header) + 3) + struct.pack(">i", (1 << 24) | len(header)) + header + b"abc"
    )
    cmd = RemotingCommand(
        310,
        language=LanguageCode.JAVA,
        opaque=42,
        ext_fields={"a": "group", "b": "TopicA"},
        body=b"abc",
        serialize_type=SerializeType.ROCKETMQ,
    )
    assert encode_command_bytes(cmd) == expected
    assert decode_command(expected[4:]) == cmd
    # the literal bytes, for the record
    assert header[:17] == bytes.fromhex("01360001970000002a0000000000000000")


def test_rocketmq_binary_remark_duplicates_and_empty_values() -> None:
    header = binary_header_by_table(
        code=1,
        language=9,
        version=401,
        opaque=-5,
        flag=1,
        remark="oops é".encode(),
        ext=[(b"k", b"1"), (b"k", b"2"), (b"empty", b"")],
    )
    cmd = decode_command(struct.pack(">i", (1 << 24) | len(header)) + header)
    assert cmd.remark == "oops é"
    assert cmd.ext_fields == {"k": "2", "empty": ""}  # last duplicate wins
    assert cmd.language == LanguageCode.GO
    assert cmd.opaque == -5 and cmd.is_response
    assert cmd.serialize_type == SerializeType.ROCKETMQ


def test_rocketmq_binary_unknown_language_byte_kept() -> None:
    header = binary_header_by_table(code=10, language=99, version=0, opaque=1, flag=0, remark=b"", ext=[])
    assert decode_command(struct.pack(">i", (1 << 24) | len(header)) + header).language == 99


def test_ext_values_as_json_numbers_booleans_null_ali_ons_style() -> None:
    header = (
        b'{"code":17,"language":"JAVA","opaque":1,"flag":0,"version":121,'
        b'"extFields":{"topic":"T","queueId":3,"order":false,"k":true,"n":null,"f":1.5,"big":12345678901234}}'
    )
    cmd = decode_command(json_frame(header)[4:])
    assert cmd.ext_fields == {
        "topic": "T",
        "queueId": "3",
        "order": "false",
        "k": "true",
        "f": "1.5",
        "big": "12345678901234",
    }
    assert cmd.version == 121


def test_json_lenient_language_duplicates_missing_fields() -> None:
    cmd = decode_command(json_frame(b'{"code":"34","language":"KOTLIN","opaque":9,"opaque":10}')[4:])
    assert (cmd.code, cmd.language, cmd.opaque, cmd.flag, cmd.version) == (34, LanguageCode.OTHER, 10, 0, 0)
    assert decode_command(json_frame(b'{"code":1,"language":3}')[4:]).language == LanguageCode.PYTHON
    assert decode_command(json_frame(b'{"code":1}')[4:]).language == LanguageCode.JAVA


def test_json_fastjson_leniency_fallback() -> None:
    cmd = decode_command(
        json_frame(b"{code:105,extFields:{'topic':'T'},flag:0,language:'JAVA',opaque:4}")[4:]
    )
    assert (cmd.code, cmd.ext_fields, cmd.opaque) == (105, {"topic": "T"}, 4)
    # fastjson reads unquoted number keys and values; extFields are strings either way (null dropped)
    cmd = decode_command(json_frame(b"{code:105,extFields:{7:'x','n':8,'z':null},opaque:4}")[4:])
    assert cmd.ext_fields == {"7": "x", "n": "8"}


@pytest.mark.parametrize(
    "header",
    [
        b"",
        b"[]",
        b'"x"',
        b"{",
        b'{"code":"abc"}',
        b'{"code":99999999999}',
        b'{"code":1,"extFields":[1]}',
        b'{"code":1,"opaque":{}}',
        b"\xff\xfe",
    ],
)
def test_broken_json_headers(header: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_command(json_frame(header)[4:])


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x00",
        struct.pack(">I", 5) + b"{}",  # header length beyond frame
        struct.pack(">I", (2 << 24) | 2) + b"{}",  # unknown serialize type
        struct.pack(">I", (1 << 24) | 3) + b"abc",  # binary header too short
        struct.pack(">I", (1 << 24) | 21) + bytes(13) + struct.pack(">i", 100) + bytes(4),  # remark length
        struct.pack(">I", (1 << 24) | 21) + bytes(17) + struct.pack(">i", 1),  # ext length
        struct.pack(">I", (1 << 24) | 24) + bytes(17) + struct.pack(">i", 3) + b"\x00\x05a",  # key length
    ],
)
def test_broken_frames(frame: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_command(frame)


def test_encode_does_not_copy_body_or_parts() -> None:
    body = bytearray(b"x" * 1000)
    cmd = RemotingCommand(0, body=body)
    pieces = encode_command(cmd)
    assert len(pieces) == 2 and pieces[1] is body
    parts = [memoryview(b"abc"), b"defg"]
    cmd = RemotingCommand(0, body=b"ignored", body_parts=parts)
    pieces = encode_command(cmd)
    assert pieces[1] is parts[0] and pieces[2] is parts[1]
    whole = b"".join(bytes(p) for p in pieces)
    assert struct.unpack_from(">i", whole)[0] == len(whole) - 4
    assert bytes(decode_command(whole[4:]).body) == b"abcdefg"
    assert cmd.body_length == 7
    assert encode_command(RemotingCommand(0)).__len__() == 1


def test_request_response_helpers() -> None:
    first = next_opaque()
    req = RemotingCommand.request(105, {"topic": "T"}, oneway=True)
    assert req.opaque > first and req.is_oneway and not req.is_response
    req.serialize_type = SerializeType.ROCKETMQ
    resp = RemotingCommand.response(17, "No topic route info").response_to(req)
    assert resp.opaque == req.opaque and resp.is_response
    assert resp.serialize_type == SerializeType.ROCKETMQ
    assert resp.remark == "No topic route info"
    assert "body_length=0" in repr(resp)


def test_body_is_a_view_into_the_frame_or_a_small_copy() -> None:
    # bytes frames (what FrameDecoder yields): a body up to 8 KiB is copied, a larger one is a view
    frame = json_frame(b'{"code":0}', b"payload")[4:]
    cmd = decode_command(frame)
    assert type(cmd.body) is bytes
    assert cmd.body == b"payload"
    assert cmd.body_bytes() == b"payload"
    assert decode_command(json_frame(b'{"code":0}')[4:]).body == b""
    big = bytes(range(256)) * 33  # 8,448 bytes
    cmd = decode_command(json_frame(b'{"code":0}', big)[4:])
    assert isinstance(cmd.body, memoryview) and cmd.body == big
    # any other buffer: always a view
    mutable = bytearray(frame)
    cmd = decode_command(mutable)
    assert isinstance(cmd.body, memoryview) and cmd.body == b"payload"
    mutable[-7:] = b"changed"
    assert cmd.body == b"changed"


def test_ali_ons_request_header_shape() -> None:
    # ali-ons: always JSON, language JAVA, version 121, remark null, ext values as raw JSON types
    header = (
        b'{"code":11,"language":"JAVA","opaque":12,"flag":0,"version":121,"remark":null,"extFields":'
        b'{"consumerGroup":"CG","topic":"T","queueId":0,"queueOffset":10,"maxMsgNums":32,"sysFlag":6,'
        b'"commitOffset":-1,"suspendTimeoutMillis":15000,"subscription":"*","subVersion":1690000000000}}'
    )
    cmd = decode_command(json_frame(header)[4:])
    assert cmd.remark is None and cmd.version == 121 and cmd.language == LanguageCode.JAVA
    assert cmd.ext_fields["queueId"] == "0" and cmd.ext_fields["commitOffset"] == "-1"
    assert cmd.ext_fields["subVersion"] == "1690000000000"


def _ext_frame(area: bytes) -> bytes:
    header = struct.pack(">hbhiii", 310, 0, 407, 1, 0, 0) + struct.pack(">i", len(area)) + area
    return struct.pack(">I", (1 << 24) | len(header)) + header


def _ext_area(entries: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in entries)


def test_rocketmq_binary_ext_map_ascii_and_utf8_read_alike() -> None:
    # the all-ASCII block is sliced as text, anything else decoded entry by entry: same answers
    entries = [(b"a", b"group"), (b"topic", b"T"), (b"i", b"UNIQ_KEY\x01AB\x02WAIT\x01true\x02")]
    ascii_ext = decode_command(_ext_frame(_ext_area(entries))).ext_fields
    assert ascii_ext == {"a": "group", "topic": "T", "i": "UNIQ_KEY\x01AB\x02WAIT\x01true\x02"}
    entries.append(("clé".encode(), "värde €".encode()))
    entries.append((b"bad", b"x\xffy"))  # Java's new String(bytes, UTF_8): a replacement character
    utf8_ext = decode_command(_ext_frame(_ext_area(entries))).ext_fields
    assert utf8_ext == {**ascii_ext, "clé": "värde €", "bad": "x\ufffdy"}


@pytest.mark.parametrize(
    ("area", "message"),
    [
        (b"\x00", "truncated extFields key length"),
        (b"\xff\xff" + b"abcd", "bad extFields key length -1"),
        (b"\x00\x01a" + struct.pack(">i", -2), "bad extFields value length -2"),
        (b"\x00\x01a" + struct.pack(">i", 5) + b"abc", "bad extFields value length 5"),
        (b"\x00\x01a" + struct.pack(">i", 0) + b"\x00\x05ab", "bad extFields key length 5"),
    ],
)
def test_rocketmq_binary_ext_map_broken(area: bytes, message: str) -> None:
    with pytest.raises(RemoteProtocolError, match=message):
        decode_command(_ext_frame(area))
