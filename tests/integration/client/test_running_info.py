"""An admin tool asks a broker about an orbitmq PushConsumer and the broker relays it (real processes):
GET_CONSUMER_RUNNING_INFO answers ConsumerRunningInfo built by the consumer, CONSUME_MESSAGE_DIRECTLY
runs the consumer's listener on the stored message and answers ConsumeMessageDirectlyResult."""

from __future__ import annotations

from typing import Any

import orjson

from orbitmq.client.aio import ConsumeStatus, LitePullConsumer, Message, MessageExt, Producer, PushConsumer
from orbitmq.protocol import java_json
from orbitmq.protocol.body_fields import mq_from_key
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess
from orbitmq.transport import RemotingClient

from .conftest import Admin, client_config, eventually, unique


class Listener:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.answer: Any = ConsumeStatus.CONSUME_SUCCESS

    async def __call__(self, msgs: list[MessageExt], ctx: object) -> Any:
        self.bodies += [m.body for m in msgs]
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def test_admin_reaches_an_orbitmq_push_consumer_through_the_broker(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("RunInfoT"), unique("run-info-g")
    listener = Listener()
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=2)
    producer = Producer(unique("run-info-p"), config=client_config(namesrv))
    consumer = PushConsumer(
        group, config=client_config(namesrv), consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    tool = RemotingClient()
    await producer.start()
    await consumer.start()
    try:
        sent = [await producer.send(Message(topic, b"m%d" % i)) for i in range(4)]
        await eventually(lambda: len(listener.bodies) == 4, what="4 messages consumed")
        assert consumer.instance is not None
        client_id = consumer.instance.client_id

        async def ask(code: int, **ext: str) -> RemotingCommand:
            request = RemotingCommand.request(code, {"consumerGroup": group, "clientId": client_id, **ext})
            return await tool.invoke(broker.broker_addr, request, 10.0)

        async def committed() -> bool:
            response = await ask(RequestCode.GET_CONSUMER_RUNNING_INFO, jstackEnable="false")
            table = java_json.loads(response.body_bytes())["mqTable"]
            return sum(pq["commitOffset"] for pq in table.values()) == 4

        await eventually(committed, what="offsets 4 in the running info")
        response = await ask(RequestCode.GET_CONSUMER_RUNNING_INFO, jstackEnable="true")
        assert response.code == ResponseCode.SUCCESS, response.remark
        info = java_json.loads(response.body_bytes())
        props = info["properties"]
        assert props["consumerGroup"] == group
        assert props["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert props["PROP_CONSUMEORDERLY"] == "false"
        assert props["PROP_NAMESERVER_ADDR"] == namesrv.address + ";"
        assert int(props["PROP_CONSUMER_START_TIMESTAMP"]) > 0
        assert {s["topic"] for s in info["subscriptionSet"]} == {topic, "%RETRY%" + group}
        queues = {mq_from_key(k): v for k, v in info["mqTable"].items()}
        assert {mq.queue_id for mq in queues if mq.topic == topic} == {0, 1}
        for pq in queues.values():
            assert pq["cachedMsgCount"] == 0 and pq["droped"] is False and pq["lastPullTimestamp"] > 0
        status = info["statusTable"][topic]
        assert status["pullTPS"] > 0 and status["consumeOKTPS"] > 0 and status["consumeFailedMsgs"] == 0
        assert "Thread" in info["jstack"]

        # CONSUME_MESSAGE_DIRECTLY: the broker attaches the record found by the offset message id
        direct = await ask(RequestCode.CONSUME_MESSAGE_DIRECTLY, msgId=sent[2].offset_msg_id)
        assert direct.code == ResponseCode.SUCCESS, direct.remark
        result = orjson.loads(direct.body_bytes())
        assert (result["consumeResult"], result["order"], result["autoCommit"]) == ("CR_SUCCESS", False, True)
        assert result["spentTimeMills"] >= 0
        assert listener.bodies[-1] == b"m2" and len(listener.bodies) == 5
        listener.answer = ConsumeStatus.RECONSUME_LATER
        later = orjson.loads(
            (await ask(RequestCode.CONSUME_MESSAGE_DIRECTLY, msgId=sent[0].offset_msg_id)).body_bytes()
        )
        assert later["consumeResult"] == "CR_LATER"
        listener.answer = ValueError("listener broke")
        thrown = orjson.loads(
            (await ask(RequestCode.CONSUME_MESSAGE_DIRECTLY, msgId=sent[1].offset_msg_id)).body_bytes()
        )
        assert thrown["consumeResult"] == "CR_THROW_EXCEPTION"
        assert thrown["remark"] == "ValueError: listener broke"
        assert listener.bodies[-2:] == [b"m0", b"m1"]
    finally:
        await tool.close()
        await consumer.shutdown()
        await producer.shutdown()


async def test_a_lite_pull_consumer_answers_with_its_settings_and_subscriptions(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("RunInfoLiteT"), unique("run-info-lite-g")
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=1)
    consumer = LitePullConsumer(group, config=client_config(namesrv), pull_batch_size=7)
    consumer.subscribe(topic, "*")
    producer = Producer(unique("run-info-lite-p"), config=client_config(namesrv))
    tool = RemotingClient()
    await producer.start()
    await consumer.start()
    try:
        sent = await producer.send(Message(topic, b"lite"))
        assert consumer.instance is not None
        ext = {"consumerGroup": group, "clientId": consumer.instance.client_id}

        async def registered() -> bool:
            request = RemotingCommand.request(
                RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}
            )
            return (await tool.invoke(broker.broker_addr, request, 5.0)).code == ResponseCode.SUCCESS

        await eventually(registered, what="the lite pull consumer's heartbeat")
        request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, ext)
        response = await tool.invoke(broker.broker_addr, request, 10.0)
        assert response.code == ResponseCode.SUCCESS, response.remark
        info = orjson.loads(response.body_bytes())
        assert info["properties"]["consumerGroup"] == group
        assert info["properties"]["pullBatchSize"] == "7"
        assert info["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_ACTIVELY"
        assert [s["topic"] for s in info["subscriptionSet"]] == [topic]
        # a lite pull consumer has no listener: consume-directly is refused with RocketMQ's remark
        request = RemotingCommand.request(
            RequestCode.CONSUME_MESSAGE_DIRECTLY, {**ext, "msgId": sent.offset_msg_id}
        )
        refused = await tool.invoke(broker.broker_addr, request, 10.0)
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert refused.remark == f"The Consumer Group <{group}> not exist in this consumer"
    finally:
        await tool.close()
        await consumer.shutdown()
        await producer.shutdown()
