"""Every processor reads a boolean or number header field as Apache RocketMQ does (Java's parsers):
the C++-core clients write booleans as "0"/"1", which Java reads as false; "True" is true."""

from __future__ import annotations

import orjson
from tests.integration.broker.conftest import Raw, messages

from orbitmq.message.batch import encode_batch
from orbitmq.message.model import Message
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.testing.requests import create_topic_ext, long_names, send_ext

FALSE_TEXTS = ("0", "1", "", "false", "yes")
TRUE_TEXTS = ("True", "TRUE", "true")


async def _max_offset(raw: Raw, topic: str) -> int:
    response = await raw.call(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
    assert response.code == ResponseCode.SUCCESS, response.remark
    return int(response.ext_fields["offset"])


async def test_send_batch_flag_v1_and_v2(raw: Raw) -> None:
    topic = "JavaFlagSend"
    await raw.create_topic(topic, queues=1)
    batch_body = encode_batch([Message.create(topic, b"a"), Message.create(topic, b"b")])
    header = send_ext(topic, born_timestamp=1)
    for code, ext, key in (
        (RequestCode.SEND_MESSAGE, long_names(header), "batch"),
        (RequestCode.SEND_MESSAGE_V2, header, "m"),
    ):
        for text in FALSE_TEXTS:  # a single message: one more offset, its body stored as sent
            before = await _max_offset(raw, topic)
            response = await raw.call(
                code, ext | {key: text, "k": text, "unitMode": text}, b"single-" + text.encode()
            )
            assert response.code == ResponseCode.SUCCESS, (code, text, response.remark)
            assert await _max_offset(raw, topic) == before + 1
            got = messages(await raw.pull(topic, 0, before, max_nums=1))
            assert got[0].body == b"single-" + text.encode()
        for text in TRUE_TEXTS:  # the batch path: two messages out of one request
            before = await _max_offset(raw, topic)
            response = await raw.call(code, ext | {key: text}, batch_body)
            assert response.code == ResponseCode.SUCCESS, (code, text, response.remark)
            assert await _max_offset(raw, topic) == before + 2
            assert [m.body for m in messages(await raw.pull(topic, 0, before, max_nums=2))] == [b"a", b"b"]


async def test_create_topic_order_flag(raw: Raw) -> None:
    for text, expected in (("1", False), ("0", False), ("", False), ("True", True)):
        topic = f"JavaFlagOrder{len(text)}{text}"
        header = create_topic_ext(topic, queues=1)
        response = await raw.call(RequestCode.UPDATE_AND_CREATE_TOPIC, header | {"order": text})
        assert response.code == ResponseCode.SUCCESS, response.remark
        configs = await raw.call(RequestCode.GET_ALL_TOPIC_CONFIG)
        table = orjson.loads(configs.body_bytes())["topicConfigTable"]
        assert table[topic]["order"] is expected, (text, table[topic])


async def test_delete_group_remove_offset_flag(raw: Raw) -> None:
    topic = "JavaFlagGroup"
    await raw.create_topic(topic, queues=1)
    for text, removed in (("1", False), ("True", True)):
        group = f"JavaFlagGroup{len(text)}"
        update = {"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "7"}
        response = await raw.call(RequestCode.UPDATE_CONSUMER_OFFSET, update)
        assert response.code == ResponseCode.SUCCESS, response.remark
        response = await raw.call(
            RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": group, "removeOffset": text}
        )
        assert response.code == ResponseCode.SUCCESS, response.remark
        query = {"consumerGroup": group, "topic": topic, "queueId": "0"}
        response = await raw.call(RequestCode.QUERY_CONSUMER_OFFSET, query)
        # a removed offset is unknown again (QUERY_NOT_FOUND, or 0 for a queue that starts at 0)
        kept = response.code == ResponseCode.SUCCESS and response.ext_fields.get("offset") == "7"
        assert kept is not removed, (text, response.code, response.ext_fields)


async def test_end_transaction_from_check_flag_is_not_an_error(raw: Raw) -> None:
    # a transaction the broker does not know: answered the same, whatever the flag's text
    for text in ("0", "1", "", "True"):
        ext = {
            "producerGroup": "pg",
            "tranStateTableOffset": "0",
            "commitLogOffset": "0",
            "commitOrRollback": "8",
            "fromTransactionCheck": text,
            "msgId": "x",
        }
        response = await raw.call(RequestCode.END_TRANSACTION, ext)
        assert response is None or "boolean" not in (response.remark or ""), response
