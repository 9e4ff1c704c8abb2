"""Producer rules that need no broker: validation before sending, the V2 header, ordered selection,
user properties."""

from __future__ import annotations

import pytest

from orbitmq.client.producer import Producer
from orbitmq.client.send_request import Prepared, put_user_property, select_by_hash, send_header_v2
from orbitmq.common.clock import FakeClock
from orbitmq.common.errors import ClientError
from orbitmq.message import properties as P
from orbitmq.message.codec import decode_properties, decompress_body
from orbitmq.message.model import Message, MessageQueue


def test_header_v2_short_names() -> None:
    header = send_header_v2(
        group="G",
        topic="T",
        queue_id=3,
        sys_flag=1,
        born_timestamp=99,
        flag=7,
        properties="p",
        broker_name="b",
        reconsume_times=2,
        max_reconsume_times=16,
        batch=True,
    )
    assert header == {
        "a": "G",
        "b": "T",
        "c": "TBW102",
        "d": "4",
        "e": "3",
        "f": "1",
        "g": "99",
        "h": "7",
        "i": "p",
        "j": "2",
        "k": "false",
        "l": "16",
        "m": "true",
        "n": "b",
    }
    assert "l" not in send_header_v2(
        group="G", topic="T", queue_id=0, sys_flag=0, born_timestamp=0, flag=0, properties="", broker_name="b"
    )


def test_select_by_hash_is_stable_per_key_and_java_compatible() -> None:
    mqs = [MessageQueue("T", "b", i) for i in range(4)]
    msg = Message("T", b"x")
    assert select_by_hash(mqs, msg, "order-1") == select_by_hash(mqs, msg, "order-1")
    # "a".hashCode() == 97 -> 97 % 4 == 1; negative hashes use the absolute remainder
    assert select_by_hash(mqs, msg, "a").queue_id == 1
    assert select_by_hash(mqs, msg, -7).queue_id == 3
    assert len({select_by_hash(mqs, msg, f"k{i}") for i in range(100)}) == 4


def test_reserved_user_properties_refused() -> None:
    msg = Message("T", b"x")
    with pytest.raises(ClientError, match="used by system"):
        put_user_property(msg, P.TAGS, "x")
    with pytest.raises(ClientError):
        put_user_property(msg, "k", " ")
    assert put_user_property(msg, "color", "red").properties["color"] == "red"


@pytest.mark.parametrize(
    ("msg", "match"),
    [
        (Message("", b"x"), "blank"),
        (Message("bad topic!", b"x"), "illegal characters"),
        (Message("T" * 128, b"x"), "longer"),
        (Message("T", b""), "length is zero"),
        (Message("T", b"x" * 11), "over max"),
        (Message("TBW102", b"x"), "conflict with default topic"),
        (Message("SCHEDULE_TOPIC_XXXX", b"x"), "forbidden"),
    ],
)
async def test_invalid_messages_fail_before_sending(msg: Message, match: str) -> None:
    producer = Producer("G", "127.0.0.1:1", max_message_size=10)
    with pytest.raises(ClientError, match=match):
        await producer.send(msg)  # never started: validation comes first, nothing is sent


def test_invalid_group_refused() -> None:
    with pytest.raises(ClientError):
        Producer("bad group")


def test_prepare_sets_uniq_key_and_compresses_large_bodies() -> None:
    producer = Producer("G", "127.0.0.1:1")
    small = Message.create("T", b"x" * 4095, tags="a")
    prepared = producer.path.prepare(small)
    assert prepared.sys_flag == 0 and prepared.body == small.body
    assert len(small.properties[P.UNIQ_KEY]) == 32
    big = Message.create("T", b"y" * 4096)
    prepared = producer.path.prepare(big)
    assert prepared.sys_flag & 0x1 and prepared.sys_flag & 0x300 == 0x300
    assert decompress_body(prepared.body, prepared.sys_flag) == big.body
    assert decode_properties(prepared.properties)[P.UNIQ_KEY] == big.properties[P.UNIQ_KEY]


def test_prepare_moves_retry_counters_to_header_fields() -> None:
    producer = Producer("G", "127.0.0.1:1")
    msg = Message("%RETRY%G", b"x", properties={P.RECONSUME_TIME: "3", P.MAX_RECONSUME_TIMES: "16"})
    prepared = producer.path.prepare(msg)
    assert (prepared.reconsume_times, prepared.max_reconsume_times) == (3, 16)
    props = decode_properties(prepared.properties)
    assert P.RECONSUME_TIME not in props and P.MAX_RECONSUME_TIMES not in props


@pytest.mark.parametrize(
    ("sys_flag", "flag", "reconsume", "max_reconsume", "batch"),
    [(0, 0, 0, None, False), (1, 7, 2, 16, False), (0, -3, 0, 0, True), (4, 0, 5, None, True)],
)
def test_header_from_template_equals_built_header(
    sys_flag: int, flag: int, reconsume: int, max_reconsume: int | None, batch: bool
) -> None:
    """The per-queue header template plus per-message fields gives the same fields, in the same order,
    as building the header whole, for different producer settings."""
    clock = FakeClock()
    mq = MessageQueue("T", "b", 3)
    for create_key, queue_nums in (("TBW102", 4), ("TBW102", 4), ("OTHER", 4), ("OTHER", 8)):
        producer = Producer(
            "G",
            "127.0.0.1:9876",
            clock=clock,
            create_topic_key=create_key,
            default_topic_queue_nums=queue_nums,
        )
        clock.advance(0.005)
        for _ in range(2):  # from a new template, then from the kept one
            prepared = Prepared(b"", sys_flag, "p", reconsume, max_reconsume)
            got = producer.path.header(mq, "T", prepared, flag, batch)
            want = send_header_v2(
                group="G",
                topic="T",
                queue_id=3,
                sys_flag=sys_flag,
                born_timestamp=clock.now_ms(),
                flag=flag,
                properties="p",
                broker_name="b",
                reconsume_times=reconsume,
                max_reconsume_times=max_reconsume,
                batch=batch,
                default_topic=create_key,
                default_topic_queue_nums=queue_nums,
            )
            assert list(got.items()) == list(want.items())
            got["b"] = "changed"  # the caller's copy: the next header must not see it


def test_header_templates_are_bounded_by_the_producers_option() -> None:
    """`max_header_templates` bounds the per-queue template cache (cleared whole when full); with the
    built-in 4096 three queues would keep three templates."""
    producer = Producer("G", "127.0.0.1:9876", max_header_templates=2)
    for queue_id in range(3):
        header = producer.path.header(MessageQueue("T", "b", queue_id), "T", Prepared(b"", 0, "p", 0, None))
        assert header["e"] == str(queue_id)
        assert 1 <= len(producer.path.templates) <= 2
    with pytest.raises(ClientError, match="max_header_templates"):
        Producer("G", "127.0.0.1:9876", max_header_templates=0)
