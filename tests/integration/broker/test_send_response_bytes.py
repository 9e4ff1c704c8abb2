"""The bytes a real broker writes back for SEND_MESSAGE_V2, frame by frame, over a raw socket.

The send processor answers without a coroutine when the store needs no wait (transport/dispatch.py
sends a returned RemotingCommand at once). Real RocketMQ clients parse these frames, so they must stay
exactly what the coroutine path wrote: JSON (fastjson's key order) and ROCKETMQ headers of a stored
message, an error answer with its remark, the name guard's refusal, and no frame at all for a oneway send.
The expected frames are written out here in full; only the msgId (the commit-log offset, which depends
on what the module's other tests stored before) is taken from the answer, and checked on its own.
"""

from __future__ import annotations

import asyncio
import struct

from tests.integration.broker.conftest import Raw

from orbitmq.message.hosts import pack_address
from orbitmq.message.ids import offset_msg_id
from orbitmq.protocol.codes import RequestCode, SerializeType
from orbitmq.protocol.command import RemotingCommand, encode_command_bytes

TOPIC = "SendResponseBytes"


def _send(opaque: int, topic: str, queue_id: int, *, oneway: bool = False) -> RemotingCommand:
    ext = {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": "1700000000000",
        "h": "0",
        "i": "UNIQ_KEY\x01C0A80001000018B4AAC20000000001\x02WAIT\x01true",
        "j": "0",
        "k": "false",
        "m": "false",
    }
    request = RemotingCommand(RequestCode.SEND_MESSAGE_V2, opaque=opaque, ext_fields=ext, body=b"payload")
    if oneway:
        request.flag = 2
    return request


async def _frame(reader: asyncio.StreamReader) -> bytes:
    """One whole frame, length prefix included."""
    prefix = await asyncio.wait_for(reader.readexactly(4), 5)
    (length,) = struct.unpack(">i", prefix)
    return prefix + await asyncio.wait_for(reader.readexactly(length), 5)


def _json_frame(header: bytes) -> bytes:
    return struct.pack(">ii", 4 + len(header), len(header)) + header


async def test_send_answers_are_byte_identical(raw: Raw) -> None:
    await raw.create_topic(TOPIC, queues=2)
    broker = raw.broker
    host, port = broker.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        # 1. stored, JSON header
        writer.write(encode_command_bytes(_send(7001, TOPIC, 1)))
        got = await _frame(reader)
        msg_id = got.split(b'"msgId":"', 1)[1][:32].decode()
        assert msg_id[:16] == offset_msg_id(pack_address(broker), 0)[:16]  # this broker's host and port
        offset = int(msg_id[16:], 16)
        assert msg_id == offset_msg_id(pack_address(broker), offset)
        assert got == _json_frame(
            b'{"code":0,"extFields":{"msgId":"' + msg_id.encode() + b'","queueId":"1","queueOffset":"0",'
            b'"MSG_REGION":"DefaultRegion","TRACE_ON":"true"},"flag":1,"language":"PYTHON","opaque":7001,'
            b'"serializeTypeCurrentRPC":"JSON","version":407}'
        )

        # 2. stored, ROCKETMQ (binary) header: the answer uses the request's serialization
        binary = _send(7002, TOPIC, 1)
        binary.serialize_type = SerializeType.ROCKETMQ
        writer.write(encode_command_bytes(binary))
        got = await _frame(reader)
        start = got.index(b"msgId") + len(b"msgId") + 4
        next_id = got[start : start + 32].decode()
        assert next_id[:16] == msg_id[:16] and int(next_id[16:], 16) > offset
        ext = [
            ("msgId", next_id),
            ("queueId", "1"),
            ("queueOffset", "1"),
            ("MSG_REGION", "DefaultRegion"),
            ("TRACE_ON", "true"),
        ]
        ext_bytes = b"".join(
            struct.pack(">H", len(k)) + k.encode() + struct.pack(">i", len(v)) + v.encode() for k, v in ext
        )
        # code 0, language PYTHON (3), version 407, opaque, flag 1 (response), no remark
        header = struct.pack(">HBHIIi", 0, 3, 407, 7002, 1, 0) + struct.pack(">i", len(ext_bytes)) + ext_bytes
        assert got == struct.pack(">ii", 4 + len(header), (1 << 24) | len(header)) + header

        # 3. refused by the processor (queue id out of range): SYSTEM_ERROR and RocketMQ's remark
        writer.write(encode_command_bytes(_send(7003, TOPIC, 9)))
        got = await _frame(reader)
        me = "{}:{}".format(*writer.get_extra_info("sockname")[:2])
        remark = (
            f"request queueId[9] is illegal, TopicConfig(topic_name='{TOPIC}', read_queue_nums=2, "
            "write_queue_nums=2, perm=6, topic_filter_type='SINGLE_TAG', topic_sys_flag=0, order=False) "
            f"Producer: {me}"
        )
        assert got == _json_frame(
            b'{"code":1,"flag":1,"language":"PYTHON","opaque":7003,"remark":"' + remark.encode() + b'",'
            b'"serializeTypeCurrentRPC":"JSON","version":407}'
        )

        # 4. refused by the name guard (illegal topic): answered at once, no coroutine
        writer.write(encode_command_bytes(_send(7004, "bad topic", 0)))
        got = await _frame(reader)
        assert got == _json_frame(
            b'{"code":1,"flag":1,"language":"PYTHON","opaque":7004,"remark":"The specified topic contains '
            b'illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$","serializeTypeCurrentRPC":"JSON",'
            b'"version":407}'
        )

        # 5. a oneway send is stored and never answered: the next frame answers the next request
        writer.write(encode_command_bytes(_send(7005, TOPIC, 0, oneway=True)))
        writer.write(encode_command_bytes(_send(7006, TOPIC, 0)))
        got = await _frame(reader)
        assert b'"opaque":7006' in got
        assert b'"queueId":"0","queueOffset":"1"' in got  # the oneway message took offset 0
    finally:
        writer.close()
        await writer.wait_closed()
