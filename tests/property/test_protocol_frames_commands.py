"""Property tests: frames and commands round-trip; random bytes never raise anything unexpected."""

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.protocol.codes import LanguageCode, SerializeType
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command_bytes
from orbitmq.protocol.frames import FrameDecoder

int32 = st.integers(-(2**31), 2**31 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)
texts = st.text(max_size=20)


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    binary = draw(st.booleans())
    remark = draw(st.none() | texts)
    if binary and remark == "":
        remark = None  # the binary header cannot tell an empty remark from none
    return RemotingCommand(
        code=draw(int16 if binary else int32),
        language=draw(st.integers(0, 255) if binary else st.sampled_from(list(LanguageCode))),
        version=draw(int16 if binary else int32),
        opaque=draw(int32),
        flag=draw(int32),
        remark=remark,
        ext_fields=draw(st.dictionaries(texts, texts, max_size=6)),
        body=draw(st.binary(max_size=64)),
        serialize_type=SerializeType.ROCKETMQ if binary else SerializeType.JSON,
    )


@given(commands())
def test_command_round_trip(cmd: RemotingCommand) -> None:
    data = encode_command_bytes(cmd)
    frames = FrameDecoder().feed(data)
    assert len(frames) == 1
    assert decode_command(frames[0]) == cmd


@given(st.lists(commands(), min_size=1, max_size=5), st.lists(st.integers(1, 50), max_size=40))
def test_frames_same_for_every_chunking(cmds: list[RemotingCommand], cuts: list[int]) -> None:
    stream = b"".join(encode_command_bytes(c) for c in cmds)
    whole = FrameDecoder().feed(stream)
    decoder = FrameDecoder()
    chunked: list[bytes] = []
    pos = 0
    for cut in cuts:
        chunked += decoder.feed(stream[pos : pos + cut])
        pos += cut
    chunked += decoder.feed(stream[pos:])
    assert chunked == whole
    assert [decode_command(f) for f in whole] == cmds


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_random_frames_decode_or_protocol_error(data: bytes) -> None:
    try:
        cmd = decode_command(data)
    except RemoteProtocolError:
        return
    assert isinstance(cmd, RemotingCommand)


@settings(max_examples=300)
@given(st.sampled_from([0, 1]), st.binary(max_size=120), st.binary(max_size=20))
def test_random_headers_decode_or_protocol_error(kind: int, header: bytes, body: bytes) -> None:
    frame = ((kind << 24) | len(header)).to_bytes(4, "big") + header + body
    try:
        cmd = decode_command(frame)
    except RemoteProtocolError:
        return
    assert cmd.body == body


@settings(max_examples=300)
@given(st.lists(st.binary(max_size=40), max_size=8))
def test_random_stream_gives_frames_need_more_or_protocol_error(chunks: list[bytes]) -> None:
    decoder = FrameDecoder(max_frame_size=1 << 20)
    try:
        for chunk in chunks:
            for frame in decoder.feed(chunk):
                assert isinstance(frame, bytes)
    except RemoteProtocolError:
        pass


json_ish = st.text(alphabet="{}[]:,'\"0123456789-.abcdeflnorstuxyzEFJLNOSTV\\ ", max_size=80)
header_prefixes = st.sampled_from(
    ["", '{"code":1,"extFields":', "{code:1,extFields:{", '{"code":1,"remark":']
)


@settings(max_examples=500)
@given(header_prefixes, json_ish)
def test_json_ish_headers_decode_to_clean_commands_or_protocol_error(prefix: str, text: str) -> None:
    header = (prefix + text).encode()
    try:
        cmd = decode_command(len(header).to_bytes(4, "big") + header)
    except RemoteProtocolError:
        return
    assert all(type(k) is str and type(v) is str for k, v in cmd.ext_fields.items())
    assert cmd.remark is None or type(cmd.remark) is str
    for serialize_type in SerializeType:
        cmd.serialize_type = serialize_type
        again = decode_command(encode_command_bytes(cmd)[4:])
        assert again.ext_fields == cmd.ext_fields
