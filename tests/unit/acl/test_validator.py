"""PlainAccessValidator on requests built here (the real-broker tests are in tests/integration/security)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orbitmq.acl import AclError, PlainAccessValidator
from orbitmq.protocol.acl_sign import sign_ext_fields
from orbitmq.protocol.bodies_client import ConsumerData, HeartbeatData, SubscriptionData
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand

ACL = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: adminkey
    secretKey: adminsecret
    admin: true
"""
CLIENT = "127.0.0.1:40000"


def signed(
    code: int, ext: dict[str, str], body: bytes = b"", key: str = "rocketmq2", secret: str = "12345678"
) -> RemotingCommand:
    request = RemotingCommand.request(code, ext, body)
    sign_ext_fields(request.ext_fields, body, key, secret)
    return request


@pytest.fixture
def validator(tmp_path: Path) -> PlainAccessValidator:
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    return PlainAccessValidator(path, check_interval=0.0)


def refused(validator: PlainAccessValidator, request: RemotingCommand, address: str = CLIENT) -> str:
    with pytest.raises(AclError) as info:
        validator.check(request, address)
    return str(info.value)


def test_send_needs_pub(validator: PlainAccessValidator) -> None:
    validator.check(signed(RequestCode.SEND_MESSAGE_V2, {"a": "groupB", "b": "topicB"}), CLIENT)
    text = refused(validator, signed(RequestCode.SEND_MESSAGE_V2, {"a": "groupB", "b": "topicC"}))
    assert text == "No default permission for topic=topicC"
    assert "topic=topicA" in refused(validator, signed(RequestCode.SEND_MESSAGE, {"topic": "topicA"}))
    # default topic perm DENY
    refused(validator, signed(RequestCode.SEND_BATCH_MESSAGE, {"b": "other"}))


def test_pull_needs_topic_and_group_sub(validator: PlainAccessValidator) -> None:
    validator.check(signed(RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "groupB"}), CLIENT)
    validator.check(signed(RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "any"}), CLIENT)
    text = refused(
        validator, signed(RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "groupA"})
    )
    assert text == "No default permission for group=groupA"


def test_heartbeat_checks_every_subscription(validator: PlainAccessValidator) -> None:
    def heartbeat(topic: str) -> bytes:
        data = HeartbeatData(
            "c1", [], [ConsumerData("groupB", subscription_data_set=[SubscriptionData(topic)])]
        )
        return data.to_json()

    validator.check(signed(RequestCode.HEART_BEAT, {}, heartbeat("topicC")), CLIENT)
    assert "topic=topicA" in refused(validator, signed(RequestCode.HEART_BEAT, {}, heartbeat("topicA")))


def test_signature_key_and_admin_checks(validator: PlainAccessValidator) -> None:
    assert (
        refused(validator, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG))
        == "No accessKey is configured"
    )
    unknown = signed(RequestCode.GET_BROKER_CONFIG, {}, key="nobody-here")
    assert refused(validator, unknown) == "No acl config for nobody-here"
    wrong = signed(RequestCode.GET_BROKER_CONFIG, {}, secret="not-the-secret")
    assert refused(validator, wrong) == "Check signature failed for accessKey=rocketmq2"
    tampered = signed(RequestCode.SEND_MESSAGE_V2, {"a": "groupB", "b": "topicB"}, b"body")
    tampered.body = b"other body"
    assert "Check signature failed" in refused(validator, tampered)
    admin_only = signed(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "x"})
    assert refused(validator, admin_only) == (
        "Need admin permission for request code=17, but accessKey=rocketmq2 is not"
    )
    validator.check(
        signed(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "x"}, key="adminkey", secret="adminsecret"),
        CLIENT,
    )


def test_white_addresses(validator: PlainAccessValidator) -> None:
    unsigned = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "x"})
    validator.check(unsigned, "10.10.103.7:1234")  # global white list: anything goes
    unsigned.ext_fields["AccessKey"] = "rocketmq2"
    validator.check(unsigned, "192.168.1.9:1234")  # the account's white address: no signature
    assert "Check signature failed" in refused(validator, unsigned, "192.168.2.9:1234")


def test_trace_topic_pub_passes(validator: PlainAccessValidator) -> None:
    validator.check(signed(RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "RMQ_SYS_TRACE_TOPIC"}), CLIENT)


def test_reload_on_change_and_bad_file_keeps_rules(validator: PlainAccessValidator) -> None:
    request = signed(RequestCode.SEND_MESSAGE_V2, {"a": "groupB", "b": "topicC"})
    refused(validator, request)
    text = ACL.replace("topicC=SUB", "topicC=PUB")
    validator.path.write_text(text)
    os.utime(validator.path, ns=(1, 1))  # a different mtime even on coarse clocks
    validator.check(request, CLIENT)
    validator.path.write_text("accounts: [ {accessKey: short, secretKey: x} ]")
    os.utime(validator.path, ns=(2, 2))
    validator.check(request, CLIENT)  # the broken file is not taken; the rules in force stay


def test_update_and_delete_write_the_file(validator: PlainAccessValidator) -> None:
    validator.update_account(
        {"accessKey": "newaccount", "secretKey": "newsecret1", "topicPerms": "t1=PUB", "admin": False}
    )
    again = PlainAccessValidator(validator.path)
    assert again.config.accounts["newaccount"].perms == {"t1": 4}
    assert again.config.counter == 1
    request = signed(
        RequestCode.SEND_MESSAGE_V2, {"a": "g", "b": "t1"}, key="newaccount", secret="newsecret1"
    )
    validator.check(request, CLIENT)
    with pytest.raises(AclError):
        validator.update_account({"accessKey": "x2345678", "secretKey": "y2345678", "topicPerms": "t=BAD"})
    assert validator.delete_account("newaccount")
    assert not validator.delete_account("newaccount")
    assert "newaccount" not in PlainAccessValidator(validator.path).config.accounts
    validator.update_global_white(["172.16.*.*"])
    validator.check(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC), "172.16.3.3:1")
    with pytest.raises(AclError):
        validator.update_global_white(["999.1.1.1"])


def test_refusal_log_is_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from orbitmq.acl.refusals import RefusalLog

    now = [0.0]
    refusals = RefusalLog(logging.getLogger("test.acl"), monotonic=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="test.acl"):
        for _ in range(100):
            refusals.refused(10, "1.2.3.4:5", "No accessKey is configured")
        now[0] = 1.5
        refusals.refused(10, "1.2.3.4:5", "No accessKey is configured")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "99 more refused" in lines[1]


@pytest.mark.parametrize(
    "code",
    [
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.CLONE_GROUP_OFFSET,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
        RequestCode.CLEAN_UNUSED_TOPIC,
        RequestCode.DELETE_EXPIRED_COMMITLOG,
    ],
)
def test_broker_wide_destructive_codes_need_an_admin(validator: PlainAccessValidator, code: int) -> None:
    """Beyond 4.9.8: resetting/cloning offsets and deleting queues, topics or log files broker-wide."""
    ext = {"topic": "topicB", "group": "groupB", "srcGroup": "groupB", "destGroup": "groupB"}
    assert refused(validator, signed(code, ext)) == (
        f"Need admin permission for request code={int(code)}, but accessKey=rocketmq2 is not"
    )
    validator.check(signed(code, ext, key="adminkey", secret="adminsecret"), CLIENT)
