"""ACL against real processes: a nameserver and a broker with aclEnable=true.

The broker checks every request against broker_acl.yml (signature, admin codes, topic/group perms,
white lists, reload on change, the ACL admin codes that rewrite the file); the nameserver refuses
writes (REGISTER_BROKER, ...) not signed by an admin account, while the real broker, which signs its
registrations with accessKey/secretKey from broker.conf, registers.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import yaml

from orbitmq.admin.api import AdminClient
from orbitmq.admin.cli import main as admin_main
from orbitmq.client.aio import (
    ConsumeConcurrentlyContext,
    ConsumeStatus,
    LitePullConsumer,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    SendStatus,
)
from orbitmq.client.config import ClientConfig
from orbitmq.common.errors import BrokerError
from orbitmq.namesrv.route_table import DataVersion
from orbitmq.namesrv.wire import encode_registration
from orbitmq.protocol.codes import RequestCode, ResponseCode, SerializeType
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess, start_broker, start_namesrv
from orbitmq.transport import RemotingClient
from orbitmq.transport.signing import request_signer

ADMIN = ("adminaccount", "adminsecret1")
PRODUCER = ("produceronly", "producersecret")
CONSUMER = ("consumeronly", "consumersecret")
TOPIC = "AclTopic"
GROUP = "AclGroup"

BROKER_ACL: dict[str, object] = {
    "globalWhiteRemoteAddresses": [],
    "accounts": [
        {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
        {
            "accessKey": PRODUCER[0],
            "secretKey": PRODUCER[1],
            "defaultTopicPerm": "DENY",
            "defaultGroupPerm": "SUB",
            "topicPerms": [f"{TOPIC}=PUB", "TBW102=PUB"],
        },
        {
            "accessKey": CONSUMER[0],
            "secretKey": CONSUMER[1],
            "defaultTopicPerm": "DENY",
            "defaultGroupPerm": "DENY",
            "topicPerms": [f"{TOPIC}=SUB"],
            "groupPerms": [f"{GROUP}=SUB"],
        },
    ],
}
NAMESRV_ACL = {
    "accounts": [
        {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
        {"accessKey": PRODUCER[0], "secretKey": PRODUCER[1]},
    ]
}


def write_acl(path: Path, content: object) -> None:
    path.write_text(yaml.safe_dump(content))
    # A distinct mtime even when two writes land in the same clock tick.
    stamp = time.time_ns() + 1_000_000_000
    os.utime(path, ns=(stamp, stamp))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("acl")


@pytest.fixture(scope="module")
def namesrv(workdir: Path) -> Iterator[ServerProcess]:
    write_acl(workdir / "namesrv_acl.yml", NAMESRV_ACL)
    with start_namesrv(workdir, aclEnable=True, aclFile="namesrv_acl.yml") as proc:
        yield proc


@pytest.fixture(scope="module")
def broker(workdir: Path, namesrv: ServerProcess) -> Iterator[ServerProcess]:
    write_acl(workdir / "broker_acl.yml", BROKER_ACL)
    with start_broker(
        workdir,
        namesrv.address,
        aclEnable=True,
        aclFile="broker_acl.yml",
        accessKey=ADMIN[0],
        secretKey=ADMIN[1],
        mappedFileSizeCommitLog=16 * 1024 * 1024,
        mappedFileSizeConsumeQueue=20 * 6000,
        messageDelayLevel="1s 1s 1s 1s",
    ) as proc:
        yield proc


async def call(
    addr: str,
    code: int,
    ext: dict[str, str] | None = None,
    body: bytes = b"",
    creds: tuple[str, str] | None = None,
) -> RemotingCommand:
    client = RemotingClient(rpc_hook=request_signer(*creds) if creds else None)
    try:
        return await client.invoke(addr, RemotingCommand.request(code, ext, body), 5.0)
    finally:
        await client.close()


async def wait_for(code_wanted: int, *args: object, **kwargs: object) -> RemotingCommand:
    """Repeat a call until it answers `code_wanted` (the ACL file is re-read at most once a second)."""
    deadline = time.monotonic() + 10
    while True:
        response = await call(*args, **kwargs)  # type: ignore[arg-type]
        if response.code == code_wanted or time.monotonic() > deadline:
            return response
        await asyncio.sleep(0.2)


async def ensure_topic(namesrv: ServerProcess, topic: str = TOPIC) -> None:
    async with AdminClient(namesrv.address, access_key=ADMIN[0], secret_key=ADMIN[1]) as admin:
        await admin.update_topic(topic, cluster="DefaultCluster", read_queue_nums=2, write_queue_nums=2)


# ---------------------------------------------------------------------------------------- broker


async def test_missing_unknown_and_wrong_credentials_are_refused(broker: ServerProcess) -> None:
    code = RequestCode.GET_BROKER_RUNTIME_INFO
    missing = await call(broker.address, code)
    assert missing.code == ResponseCode.NO_PERMISSION
    assert missing.remark == "org.apache.rocketmq.acl.common.AclException: No accessKey is configured"
    unknown = await call(broker.address, code, creds=("nobodyknows", "whatever1"))
    assert unknown.code == ResponseCode.NO_PERMISSION and "No acl config for nobodyknows" in str(
        unknown.remark
    )
    wrong = await call(broker.address, code, creds=(PRODUCER[0], "not-the-secret"))
    assert wrong.code == ResponseCode.NO_PERMISSION
    assert "Check signature failed for accessKey=produceronly" in str(wrong.remark)
    ok = await call(broker.address, code, creds=PRODUCER)
    assert ok.code == ResponseCode.SUCCESS


async def test_admin_only_codes(broker: ServerProcess) -> None:
    ext = {
        "topic": "NotByProducer",
        "readQueueNums": "1",
        "writeQueueNums": "1",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
        "defaultTopic": "TBW102",
    }
    refused = await call(broker.address, RequestCode.UPDATE_AND_CREATE_TOPIC, ext, creds=PRODUCER)
    assert refused.code == ResponseCode.NO_PERMISSION
    assert "Need admin permission for request code=17, but accessKey=produceronly is not" in str(
        refused.remark
    )
    done = await call(broker.address, RequestCode.UPDATE_AND_CREATE_TOPIC, ext, creds=ADMIN)
    assert done.code == ResponseCode.SUCCESS
    config = await call(broker.address, RequestCode.GET_BROKER_CONFIG, creds=ADMIN)
    assert b"secretKey=******" in config.body_bytes()  # never shown
    assert ADMIN[1].encode() not in config.body_bytes()


async def test_producer_and_consumer_with_credentials(namesrv: ServerProcess, broker: ServerProcess) -> None:
    await ensure_topic(namesrv)
    fast = {"namesrv_addrs": [namesrv.address], "rebalance_interval": 1.0, "persist_offset_interval": 0.5}
    async with Producer(
        "AclProducer", config=ClientConfig(**fast), access_key=PRODUCER[0], secret_key=PRODUCER[1]
    ) as producer:
        for i in range(5):
            await producer.send(Message.create(TOPIC, f"m{i}"))
    # The consumer's account may read but not write the topic.
    async with Producer(
        "AclProducer2",
        config=ClientConfig(**fast),
        access_key=CONSUMER[0],
        secret_key=CONSUMER[1],
        retry_times=0,
    ) as intruder:
        with pytest.raises(BrokerError) as info:
            await intruder.send(Message.create(TOPIC, "not allowed"))
        assert info.value.code == ResponseCode.NO_PERMISSION
        assert "No default permission for topic=AclTopic" in str(info.value.remark)
    consumer = LitePullConsumer(
        GROUP,
        config=ClientConfig(**fast),
        access_key=CONSUMER[0],
        secret_key=CONSUMER[1],
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe(TOPIC, "*")
    await consumer.start()
    try:
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < 5 and time.monotonic() < deadline:
            got += [m.body for m in await consumer.poll(0.2)]
        assert sorted(got) == [f"m{i}".encode() for i in range(5)]
    finally:
        await consumer.shutdown()
    # A pull in a group the account may not use is refused.
    pull = {
        "consumerGroup": "OtherGroup",
        "topic": TOPIC,
        "queueId": "0",
        "queueOffset": "0",
        "maxMsgNums": "1",
        "sysFlag": "0",
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
    }
    denied = await call(broker.address, RequestCode.PULL_MESSAGE, pull, creds=CONSUMER)
    assert denied.code == ResponseCode.NO_PERMISSION and "group=OtherGroup" in str(denied.remark)


async def test_file_reload_and_global_white_list(workdir: Path, broker: ServerProcess) -> None:
    path = workdir / "broker_acl.yml"
    code = RequestCode.GET_BROKER_RUNTIME_INFO
    assert (await call(broker.address, code)).code == ResponseCode.NO_PERMISSION
    try:
        write_acl(path, {**BROKER_ACL, "globalWhiteRemoteAddresses": ["127.0.0.*"]})
        opened = await wait_for(ResponseCode.SUCCESS, broker.address, code)
        assert opened.code == ResponseCode.SUCCESS  # unsigned, from a white-listed address
    finally:
        write_acl(path, BROKER_ACL)
    closed = await wait_for(ResponseCode.NO_PERMISSION, broker.address, code)
    assert closed.code == ResponseCode.NO_PERMISSION


async def test_acl_admin_codes_write_the_file(workdir: Path, broker: ServerProcess) -> None:
    path = workdir / "broker_acl.yml"
    create = {
        "accessKey": "createdaccount",
        "secretKey": "createdsecret",
        "defaultTopicPerm": "SUB",
        "topicPerms": "T1=PUB,T2=SUB",
        "admin": "false",
    }
    refused = await call(broker.address, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, create, creds=PRODUCER)
    assert refused.code == ResponseCode.NO_PERMISSION
    made = await call(broker.address, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, create, creds=ADMIN)
    assert made.code == ResponseCode.SUCCESS, made.remark
    written = yaml.safe_load(path.read_text())
    account = next(a for a in written["accounts"] if a["accessKey"] == "createdaccount")
    assert account["topicPerms"] == ["T1=PUB", "T2=SUB"]
    assert (
        await call(
            broker.address, RequestCode.GET_BROKER_RUNTIME_INFO, creds=("createdaccount", "createdsecret")
        )
    ).code == ResponseCode.SUCCESS

    info = await call(broker.address, RequestCode.GET_BROKER_CLUSTER_ACL_INFO, creds=ADMIN)
    assert info.code == ResponseCode.SUCCESS
    assert orjson.loads(info.ext_fields["version"])["counter"] >= 1
    assert info.ext_fields["brokerName"] == "broker-a"
    listing = await call(broker.address, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, creds=ADMIN)
    keys = {a["accessKey"] for a in orjson.loads(listing.body_bytes())["plainAccessConfigs"]}
    assert {"createdaccount", ADMIN[0]} <= keys

    elsewhere = {"globalWhiteAddrs": "10.0.0.*", "aclFileFullPath": str(workdir / "elsewhere.yml")}
    wrong_file = await call(
        broker.address, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, elsewhere, creds=ADMIN
    )
    assert wrong_file.code == ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
    assert not (workdir / "elsewhere.yml").exists()
    white = {"globalWhiteAddrs": "10.0.0.*"}
    assert (
        await call(broker.address, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, white, creds=ADMIN)
    ).code == ResponseCode.SUCCESS
    assert yaml.safe_load(path.read_text())["globalWhiteRemoteAddresses"] == ["10.0.0.*"]

    gone = await call(
        broker.address, RequestCode.DELETE_ACL_CONFIG, {"accessKey": "createdaccount"}, creds=ADMIN
    )
    assert gone.code == ResponseCode.SUCCESS
    after = await call(
        broker.address, RequestCode.GET_BROKER_RUNTIME_INFO, creds=("createdaccount", "createdsecret")
    )
    assert after.code == ResponseCode.NO_PERMISSION
    write_acl(path, BROKER_ACL)


def test_admin_cli_takes_credentials_from_environment(
    namesrv: ServerProcess,
    broker: ServerProcess,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["updateTopic", "-n", namesrv.address, "-c", "DefaultCluster", "-t", "CliAclTopic"]
    monkeypatch.delenv("ORBITMQ_ACCESS_KEY", raising=False)
    monkeypatch.delenv("ORBITMQ_SECRET_KEY", raising=False)
    assert admin_main(args) == 1
    assert "NO_PERMISSION" in capsys.readouterr().err
    monkeypatch.setenv("ORBITMQ_ACCESS_KEY", ADMIN[0])
    monkeypatch.setenv("ORBITMQ_SECRET_KEY", ADMIN[1])
    assert admin_main(args) == 0
    monkeypatch.delenv("ORBITMQ_SECRET_KEY")
    assert admin_main([*args, "--secret-key", ADMIN[1]]) == 0


# -------------------------------------------------------------------------------------- namesrv


def registration(broker_addr: str) -> tuple[dict[str, str], bytes]:
    body = encode_registration(DataVersion(1, 1), {}, compressed=False)
    ext = {
        "brokerName": "hijack",
        "brokerAddr": broker_addr,
        "clusterName": "DefaultCluster",
        "haServerAddr": "10.9.9.9:10912",
        "brokerId": "0",
        "compressed": "false",
        "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF),
    }
    return ext, body


async def test_namesrv_refuses_forged_writes(namesrv: ServerProcess, broker: ServerProcess) -> None:
    ext, body = registration("10.9.9.9:10911")
    forged = await call(namesrv.address, RequestCode.REGISTER_BROKER, ext, body)
    assert forged.code == ResponseCode.NO_PERMISSION
    assert "No accessKey is configured" in str(forged.remark)
    not_admin = await call(namesrv.address, RequestCode.REGISTER_BROKER, ext, body, creds=PRODUCER)
    assert not_admin.code == ResponseCode.NO_PERMISSION and "Need admin permission" in str(not_admin.remark)
    for code, fields in (
        (
            RequestCode.UNREGISTER_BROKER,
            {
                "brokerName": "broker-a",
                "brokerAddr": broker.address,
                "clusterName": "DefaultCluster",
                "brokerId": "0",
            },
        ),
        (RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": TOPIC}),
        (RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}),
        (RequestCode.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"}),
        (RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
    ):
        answer = await call(namesrv.address, code, fields)
        assert answer.code == ResponseCode.NO_PERMISSION, code
    # Reads stay open, and the real broker (signing with its broker.conf credentials) is registered.
    cluster = await call(namesrv.address, RequestCode.GET_BROKER_CLUSTER_INFO)
    assert cluster.code == ResponseCode.SUCCESS
    assert b"broker-a" in cluster.body_bytes() and b"hijack" not in cluster.body_bytes()
    # A signed admin write goes through.
    kv = await call(
        namesrv.address, RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"}, creds=ADMIN
    )
    assert kv.code == ResponseCode.SUCCESS


async def test_java_client_wire_form(broker: ServerProcess) -> None:
    """What AclClientRPCHook sends, signed here by hand: ROCKETMQ (binary) header serialization, and a
    QUERY_MESSAGE signed with `_UNIQUE_KEY_QUERY` included (the Java client's known quirk)."""
    ext = {
        "topic": TOPIC,
        "key": "no-such-key",
        "maxNum": "1",
        "beginTimestamp": "0",
        "endTimestamp": str(2**62),
        "_UNIQUE_KEY_QUERY": "true",
        "AccessKey": CONSUMER[0],
    }
    content = "".join(ext[k] for k in sorted(ext)).encode()  # ASCII keys: Java's order is Python's
    ext["Signature"] = base64.b64encode(
        hmac.new(CONSUMER[1].encode(), content, hashlib.sha1).digest()
    ).decode()
    request = RemotingCommand.request(RequestCode.QUERY_MESSAGE, ext)
    request.serialize_type = SerializeType.ROCKETMQ
    client = RemotingClient()
    try:
        answer = await client.invoke(broker.address, request, 5.0)
        assert answer.code != ResponseCode.NO_PERMISSION, answer.remark
        tampered = RemotingCommand.request(RequestCode.QUERY_MESSAGE, {**ext, "key": "other"})
        tampered.serialize_type = SerializeType.ROCKETMQ
        refused = await client.invoke(broker.address, tampered, 5.0)
        assert refused.code == ResponseCode.NO_PERMISSION
    finally:
        await client.close()


def test_admin_acl_subcommands(
    workdir: Path,
    broker: ServerProcess,
    namesrv: ServerProcess,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ORBITMQ_ACCESS_KEY", ADMIN[0])
    monkeypatch.setenv("ORBITMQ_SECRET_KEY", ADMIN[1])
    path = workdir / "broker_acl.yml"
    common = ["-n", namesrv.address, "-c", "DefaultCluster"]
    try:
        assert (
            admin_main(
                [
                    "updateAclConfig",
                    *common,
                    "-a",
                    "cliaccount",
                    "-s",
                    "clisecret1",
                    "-t",
                    "T1=PUB,T2=SUB",
                    "-i",
                    "DENY",
                    "-m",
                    "false",
                ]
            )
            == 0
        )
        account = next(
            a for a in yaml.safe_load(path.read_text())["accounts"] if a["accessKey"] == "cliaccount"
        )
        assert account["topicPerms"] == ["T1=PUB", "T2=SUB"] and account["defaultTopicPerm"] == "DENY"
        capsys.readouterr()
        assert admin_main(["clusterAclConfigVersion", *common, "--json"]) == 0
        rows = orjson.loads(capsys.readouterr().out)
        assert rows[0]["brokerName"] == "broker-a" and rows[0]["version"]["counter"] >= 1
        assert admin_main(["updateGlobalWhiteAddr", *common, "-g", "10.1.*.*"]) == 0
        assert yaml.safe_load(path.read_text())["globalWhiteRemoteAddresses"] == ["10.1.*.*"]
        assert admin_main(["deleteAclConfig", *common, "-a", "cliaccount"]) == 0
        assert all(a["accessKey"] != "cliaccount" for a in yaml.safe_load(path.read_text())["accounts"])
        # Not as a non-admin account.
        monkeypatch.setenv("ORBITMQ_ACCESS_KEY", PRODUCER[0])
        monkeypatch.setenv("ORBITMQ_SECRET_KEY", PRODUCER[1])
        assert admin_main(["deleteAclConfig", *common, "-a", ADMIN[0]]) == 1
        assert "Need admin permission" in capsys.readouterr().err
    finally:
        write_acl(path, BROKER_ACL)


async def test_push_consumer_with_credentials_and_a_retry(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    """PushConsumer under ACL: heartbeat, rebalance, pull, offsets and a send-back to %RETRY%<group>
    (CONSUMER_SEND_MSG_BACK needs SUB on the group) all signed."""
    await ensure_topic(namesrv, "AclPushTopic")
    fast = {"namesrv_addrs": [namesrv.address], "rebalance_interval": 1.0, "persist_offset_interval": 0.5}
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeStatus:
        seen.extend((m.body, m.reconsume_times) for m in msgs)
        first_time = any(m.reconsume_times == 0 and m.body == b"retry-me" for m in msgs)
        return ConsumeStatus.RECONSUME_LATER if first_time else ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        GROUP,
        config=ClientConfig(**fast),
        access_key=ADMIN[0],
        secret_key=ADMIN[1],
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe("AclPushTopic", "*")
    consumer.register_listener(listener)
    await consumer.start()
    try:
        async with Producer(
            "AclPushProducer", config=ClientConfig(**fast), access_key=ADMIN[0], secret_key=ADMIN[1]
        ) as producer:
            await producer.send(Message.create("AclPushTopic", "plain"))
            await producer.send(Message.create("AclPushTopic", "retry-me"))
        deadline = time.monotonic() + 25
        while (b"retry-me", 1) not in seen and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert (b"plain", 0) in seen
        assert (b"retry-me", 0) in seen and (b"retry-me", 1) in seen  # redelivered from %RETRY%AclGroup
    finally:
        await consumer.shutdown()


async def test_blocking_producer_signs_the_sends_it_makes_on_its_own_thread(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    """The blocking Producer sends from the caller's thread once the route is known
    (client/direct_send.py): those requests are signed too, and a refusal is raised, not retried."""
    from orbitmq import Producer as BlockingProducer

    await ensure_topic(namesrv)

    def signed(group: str, credentials: tuple[str, str]) -> BlockingProducer:
        # No retries: a refused attempt on this thread would otherwise be sent again, signed, on the loop.
        config = ClientConfig(namesrv_addrs=[namesrv.address], rebalance_interval=1.0)
        access_key, secret_key = credentials
        return BlockingProducer(
            group, config=config, access_key=access_key, secret_key=secret_key, retry_times=0
        )

    def scenario() -> None:
        with signed("AclBlocking", PRODUCER) as producer:
            for i in range(5):
                assert producer.send(Message.create(TOPIC, f"b{i}")).status is SendStatus.SEND_OK
            assert len(producer._direct._open) == 1  # the sends after the first left from this thread
        with signed("AclBlocking2", CONSUMER) as intruder:
            intruder.send_oneway(Message.create(TOPIC, "routes"))  # (refused quietly: a oneway)
            for _ in range(2):  # the second one certainly from this thread
                with pytest.raises(BrokerError) as info:
                    intruder.send(Message.create(TOPIC, "not allowed"))
                assert info.value.code == ResponseCode.NO_PERMISSION

    await asyncio.to_thread(scenario)
