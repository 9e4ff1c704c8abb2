"""The consumer's own resend when CONSUMER_SEND_MSG_BACK fails: RocketMQ's DefaultMQPushConsumerImpl
.sendMessageBack sets delay level 3 + reconsumeTimes on the message it sends to %RETRY%group (fact sheet
7.7), whatever level the listener asked for. The broker keeps DELAY in the properties it delivers."""

from __future__ import annotations

from orbitmq.client.aio import MessageExt, MessageQueue
from orbitmq.testing import ServerProcess

from .conftest import Admin, eventually, unique
from .test_push_consumer import Recorder, consumer


async def test_the_fallback_resend_delays_by_three_plus_the_reconsume_times(
    namesrv: ServerProcess, broker: ServerProcess
) -> None:
    topic, group = unique("FallbackDelay"), unique("FD")
    rec = Recorder()
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, [broker], queues=1)
        c = consumer(namesrv, group, topic, rec)
        await c.start()
        try:
            mq = MessageQueue(topic, "broker-a", 0)
            for n in (0, 2, 5):
                # A commit-log offset the broker does not have: the send back fails, the consumer resends.
                ghost = MessageExt(
                    topic,
                    f"ghost-{n}".encode(),
                    properties={"UNIQ_KEY": f"{n:02d}" * 16},
                    commit_log_offset=10**12,
                    reconsume_times=n,
                )
                assert await c.send_message_back(ghost, 1, mq)
            # (the test broker's delay levels are level-many seconds: the last comes after 8 s)
            await eventually(lambda: len(rec.messages) >= 3, timeout=40, what="the three resent messages")
        finally:
            await c.shutdown()
    delays = {m.body: (m.properties.get("DELAY"), m.reconsume_times) for m in rec.messages}
    assert delays == {b"ghost-0": ("3", 1), b"ghost-2": ("5", 3), b"ghost-5": ("8", 6)}
