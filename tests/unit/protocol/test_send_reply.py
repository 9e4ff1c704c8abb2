"""SendReply's template encoding writes the same bytes as the general encoder for the same command."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.protocol.codes import RPC_TYPE, LanguageCode, ResponseCode, SerializeType
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command, encode_command_bytes
from orbitmq.protocol.send_reply import SendReply, SendReplyTemplate

_INT32 = st.integers(-(2**31), 2**31 - 1)
_HEX_ID = st.text("0123456789ABCDEF", min_size=32, max_size=32)
# ids as brokers write them (hex, comma-joined for batches) and anything else (escapes, non-ASCII)
_ID = st.one_of(_HEX_ID, st.lists(_HEX_ID, min_size=1, max_size=3).map(",".join), st.text(max_size=40))
_CONSTANTS = st.one_of(
    st.tuples(st.text(max_size=20), st.sampled_from(["true", "false"])).map(
        lambda v: (("MSG_REGION", v[0]), ("TRACE_ON", v[1]))
    ),
    st.lists(
        st.tuples(st.text(min_size=1, max_size=10), st.text(max_size=10)),
        max_size=3,
        unique_by=lambda kv: kv[0],
    ),
)


@st.composite
def _replies(draw: st.DrawFn) -> SendReply:
    constants = draw(_CONSTANTS)
    reserved = {"msgId", "queueId", "queueOffset", "transactionId"}
    constants = tuple((k, v) for k, v in constants if k not in reserved)
    reply = SendReply(
        draw(st.sampled_from([ResponseCode.SUCCESS, 0, 10, 12])),
        draw(_ID),
        draw(st.integers(-5, 2**31)),
        draw(st.integers(-(2**63), 2**63 - 1)),
        SendReplyTemplate(constants),
        transaction_id=draw(st.none() | _ID),
    )
    request = RemotingCommand(
        ResponseCode.SUCCESS,
        opaque=draw(_INT32),
        flag=draw(st.sampled_from([0, 2]) | _INT32),
        serialize_type=draw(st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ])),
    )
    reply.response_to(request)
    reply.version = draw(st.sampled_from([0, 317, 373, 407, 1 << 20]) | _INT32)
    reply.language = draw(st.sampled_from(list(LanguageCode)) | st.integers(0, 300))
    reply.remark = draw(st.sampled_from([None, None, None, "", 'bad "remark"']))
    return reply


@settings(max_examples=500, deadline=None)
@given(_replies())
def test_the_template_writes_what_the_general_encoder_writes(reply: SendReply) -> None:
    general = reply.to_command()
    assert type(general) is RemotingCommand
    assert encode_command(reply) == encode_command(general)


@settings(max_examples=100, deadline=None)
@given(_replies())
def test_the_reply_decodes_to_its_fields(reply: SendReply) -> None:
    decoded = decode_command(encode_command_bytes(reply)[4:])
    assert decoded.ext_fields["msgId"] == reply.msg_id
    assert decoded.ext_fields["queueId"] == str(reply.queue_id)
    assert decoded.ext_fields["queueOffset"] == str(reply.queue_offset)
    assert decoded.ext_fields.get("transactionId") == reply.transaction_id
    assert decoded.opaque == reply.opaque
    assert decoded.flag & RPC_TYPE


def test_a_broker_answer_in_both_serializations() -> None:
    template = SendReplyTemplate((("MSG_REGION", "DefaultRegion"), ("TRACE_ON", "true")))
    for serialize_type in (SerializeType.JSON, SerializeType.ROCKETMQ):
        reply = SendReply(ResponseCode.SUCCESS, "7F00000100002A9F0000000000000123", 3, 41, template)
        reply.response_to(RemotingCommand(11, opaque=77, serialize_type=serialize_type))
        assert reply == reply.to_command()
        assert encode_command(reply) == encode_command(reply.to_command())
    json_reply = SendReply(ResponseCode.SUCCESS, "AB", 1, 2, template)
    json_reply.opaque = 5
    assert encode_command_bytes(json_reply)[8:] == (
        b'{"code":0,"extFields":{"msgId":"AB","queueId":"1","queueOffset":"2","MSG_REGION":"DefaultRegion",'
        b'"TRACE_ON":"true"},"flag":1,"language":"PYTHON","opaque":5,"serializeTypeCurrentRPC":"JSON",'
        b'"version":' + str(json_reply.version).encode() + b"}"
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([ResponseCode.SUCCESS, 10]),
            st.sampled_from([RPC_TYPE, 3]),
            st.sampled_from([LanguageCode.JAVA, LanguageCode.PYTHON, 299]),
            st.sampled_from([373, 407]),
        ),
        min_size=2,
        max_size=8,
    )
)
def test_a_shared_template_follows_each_answers_code_flag_language_and_version(
    answers: list[tuple[int, int, int, int]],
) -> None:
    # The template keeps the JSON frame of the last answer: a different one must not reuse it.
    template = SendReplyTemplate((("MSG_REGION", "DefaultRegion"), ("TRACE_ON", "true")))
    for opaque, (code, flag, language, version) in enumerate(answers):
        reply = SendReply(code, "7F00000100002A9F0000000000000123", 3, opaque, template)
        reply.opaque = opaque
        reply.flag = flag
        reply.language = language
        reply.version = version
        assert encode_command(reply) == encode_command(reply.to_command())
