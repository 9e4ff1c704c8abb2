"""ACL signatures on fixed vectors (fact sheet 9.3): values of the ext fields sorted by key (Java
String order: upper case before lower case), no keys, Signature left out, then the body; HMAC-SHA1 with
the secret key, Base64. The expected strings were computed with the openssl CLI, not with this code:
    printf '%s' 'RocketMQ1234567hello-topicgroup-aTopicTestbody-bytes' \
        | openssl dgst -sha1 -hmac 'secret-key-12345' -binary | base64
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from orbitmq.protocol.acl_sign import (
    calculate_signature,
    sign_ext_fields,
    signature_content,
    verify_signature,
)

SECRET = "secret-key-12345"
EXT = {
    "topic": "TopicTest",
    "group": "group-a",
    "b": "hello-topic",
    "SecurityToken": "1234567",
    "AccessKey": "RocketMQ",
}
BODY = b"body-bytes"
EXPECTED = "JY2+ruivumO2mYb56XQveCl2f5Y="


def test_content_is_sorted_values_then_body() -> None:
    assert signature_content(EXT) + BODY == b"RocketMQ1234567hello-topicgroup-aTopicTestbody-bytes"


def test_signature_matches_openssl_vector() -> None:
    assert calculate_signature(signature_content(EXT) + BODY, SECRET) == EXPECTED
    # and the same from the standard library, written out here
    content = b"RocketMQ" + b"1234567" + b"hello-topic" + b"group-a" + b"TopicTest" + BODY
    manual = base64.b64encode(hmac.new(SECRET.encode(), content, hashlib.sha1).digest()).decode()
    assert manual == EXPECTED


def test_short_vector() -> None:
    assert calculate_signature(b"ak-000001", "sk-000001") == "4PKsS/Jp36BIW3ctt4odVl39+tM="


def test_sign_ext_fields_adds_access_key_token_and_signature() -> None:
    ext = {"topic": "TopicTest", "group": "group-a", "b": "hello-topic"}
    sign_ext_fields(ext, BODY, "RocketMQ", SECRET, "1234567")
    assert ext["AccessKey"] == "RocketMQ"
    assert ext["SecurityToken"] == "1234567"
    assert ext["Signature"] == EXPECTED
    # the Signature itself is never part of the content
    assert verify_signature(ext, BODY, SECRET, ext["Signature"])
    assert not verify_signature(ext, BODY + b"x", SECRET, ext["Signature"])
    assert not verify_signature(ext, BODY, "other-secret", ext["Signature"])


def test_unique_key_query_left_out_but_java_form_accepted() -> None:
    ext = {"topic": "T", "key": "k", "_UNIQUE_KEY_QUERY": "true", "AccessKey": "ak-000001"}
    rocketmq = calculate_signature(b"ak-000001kT", "sk-000001")  # RocketMQ's server leaves it out
    java_client = calculate_signature(b"ak-000001truekT", "sk-000001")  # '_' sorts before 'k'
    signed = dict(ext)
    sign_ext_fields(signed, b"", "ak-000001", "sk-000001")
    assert signed["Signature"] == rocketmq
    assert verify_signature(ext, b"", "sk-000001", rocketmq)
    assert verify_signature(ext, b"", "sk-000001", java_client)


def test_java_string_order_for_non_bmp_keys() -> None:
    # U+FFFF sorts after U+10000 in UTF-16 (surrogates are 0xD800..), unlike code-point order.
    ext = {"\uffff": "A", "\U00010000": "B"}
    assert signature_content(ext) == b"BA"
