"""The send header's ext-field names against the fact sheet (section 3.1): what the client writes and
what the broker reads, under SEND_MESSAGE's long names and SEND_MESSAGE_V2's short ones."""

from orbitmq.broker.processors.send_request import V1_NAMES, V2_NAMES, V2_TO_V1, fast_v2_header, send_header
from orbitmq.client.send_request import send_header_v2

V2_GOLDEN = {
    "a": "PG",
    "b": "TopicTest",
    "c": "TBW102",
    "d": "4",
    "e": "3",
    "f": "0",
    "g": "1690000000123",
    "h": "0",
    "i": "TAGS\x01TagA\x02",
    "j": "0",
    "k": "false",
    "m": "false",
    "n": "broker-a",
}
V1_GOLDEN = {
    "producerGroup": "PG",
    "topic": "TopicTest",
    "defaultTopic": "TBW102",
    "defaultTopicQueueNums": "4",
    "queueId": "3",
    "sysFlag": "0",
    "bornTimestamp": "1690000000123",
    "flag": "0",
    "properties": "TAGS\x01TagA\x02",
    "reconsumeTimes": "0",
    "unitMode": "false",
    "batch": "false",
    "bname": "broker-a",
}


def test_client_writes_the_v2_short_names() -> None:
    header = send_header_v2(
        group="PG",
        topic="TopicTest",
        queue_id=3,
        sys_flag=0,
        born_timestamp=1690000000123,
        flag=0,
        properties="TAGS\x01TagA\x02",
        broker_name="broker-a",
    )
    assert header == V2_GOLDEN
    assert "l" in send_header_v2(**_args(), max_reconsume_times=16)


def _args() -> dict[str, object]:
    return {
        "group": "PG",
        "topic": "T",
        "queue_id": 0,
        "sys_flag": 0,
        "born_timestamp": 1,
        "flag": 0,
        "properties": "",
        "broker_name": "b",
    }


def test_short_and_long_names_pair_up() -> None:
    assert set(V2_TO_V1) == set("abcdefghijklmn")
    assert {V2_TO_V1[k]: v for k, v in V2_GOLDEN.items()} == V1_GOLDEN
    assert set(V1_NAMES) == set(V2_NAMES) == set(V1_GOLDEN) | {"maxReconsumeTimes"}


def test_broker_reads_both_namings_alike() -> None:
    expected = ("PG", "TopicTest", "TBW102", 4, 3, 0, 1690000000123, 0, "TAGS\x01TagA\x02", 0, None, False)
    assert send_header(V1_GOLDEN, V1_NAMES) == expected
    assert send_header(V2_GOLDEN, V2_NAMES) == expected
    assert fast_v2_header(V2_GOLDEN) == expected


def test_ali_ons_values() -> None:
    # what ali-ons sends: no properties, queue -1 (the broker picks), the batch flag
    ext = {"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "-1", "f": "0", "g": "1", "h": "0", "m": "true"}
    header = send_header(ext, V2_NAMES)
    assert header[4] == -1 and header[8] == "" and header[11] is True
