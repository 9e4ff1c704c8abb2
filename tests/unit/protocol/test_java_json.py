"""java_json: fastjson's non-standard output read leniently; fastjson's styles written."""

import pytest

from orbitmq.protocol import java_json
from orbitmq.protocol.java_json import JavaJsonError, ObjectKey


def test_unquoted_int_keys_and_object_keys() -> None:
    data = (
        b'{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},'
        b'"t":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}'
    )
    value = java_json.loads(data)
    assert value["brokerAddrs"] == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    [(key, offset)] = value["t"].items()
    assert isinstance(key, ObjectKey)
    assert key.as_dict() == {"brokerName": "b", "queueId": 0, "topic": "T"}
    assert key.get("queueId") == 0 and offset == 5


def test_single_quotes_unquoted_names_escapes_trailing_commas() -> None:
    value = java_json.loads("{a:'it\\'s',\"b\":[1,2,],'c':\"\\u00e9\\x41\\n\",d:-1.5e3,e:null,f:true,}")
    assert value == {"a": "it's", "b": [1, 2], "c": "éA\n", "d": -1500.0, "e": None, "f": True}


def test_surrogate_pairs_joined_and_lone_halves_replaced() -> None:
    assert java_json.loads("{a:'\\ud83d\\ude00'}") == {"a": "😀"}
    assert java_json.loads("{a:'\\ud83d'}") == {"a": "\ufffd"}


@pytest.mark.parametrize(
    "text",
    [b"", b"{", b"{a:}", b"[1 2]", b"{'a':1", b"'abc", b"{a:1}}", b"\xff", b"nul", b"{a:'\\q'}", b"[" * 500],
)
def test_errors_are_java_json_errors(text: bytes) -> None:
    with pytest.raises(JavaJsonError):
        java_json.loads(text)


def test_dumps_standard_and_fastjson_forms() -> None:
    value = {"brokerAddrs": {0: "a", 1: "b"}, "x": None}
    assert java_json.dumps(value) == b'{"brokerAddrs":{"0":"a","1":"b"},"x":null}'
    assert java_json.dumps(value, string_keys=False) == b'{"brokerAddrs":{0:"a",1:"b"},"x":null}'
    mq = ObjectKey.of({"topic": "T", "queueId": 0, "brokerName": "b"})
    assert (
        java_json.dumps({"offsetTable": {mq: 5}})
        == b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}'
    )


def test_pretty_is_fastjson_pretty_format() -> None:
    value = {
        "offsetTable": {"TopicTest@group": {0: 250, 1: 250}, "%RETRY%group@group": {0: 0}},
        "e": {},
        "l": [1],
    }
    expected = (
        "{\n"
        '\t"offsetTable":{\n'
        '\t\t"TopicTest@group":{0:250,1:250\n'
        "\t\t},\n"
        '\t\t"%RETRY%group@group":{0:0\n'
        "\t\t}\n"
        "\t},\n"
        '\t"e":{},\n'
        '\t"l":[\n'
        "\t\t1\n"
        "\t]\n"
        "}"
    )
    assert java_json.dumps_pretty(value).decode() == expected
    assert java_json.loads(expected) == value
