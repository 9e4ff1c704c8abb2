"""A push consumer's answers to the two requests an admin tool has the broker relay to it:

- GET_CONSUMER_RUNNING_INFO (307, `mqadmin consumerStatus`/`consumerProgress`): ConsumerRunningInfo —
  `properties` (the consumer's settings under DefaultMQPushConsumer's field names plus the PROP_* keys),
  `subscriptionSet` (SubscriptionData), `mqTable` (MessageQueue object key -> ProcessQueueInfo),
  `statusTable` (topic -> ConsumeStatus, client/consumer_stats.py) and, when asked, `jstack` (the
  Python threads' stacks and the event loop's tasks).
- CONSUME_MESSAGE_DIRECTLY (309, `mqadmin queryMsgById -g -d`): run the consumer's listener on the
  message the broker attached and answer ConsumeMessageDirectlyResult (CMResult names as in RocketMQ:
  CR_SUCCESS, CR_LATER, CR_RETURN_NULL for an answer the client cannot read, CR_THROW_EXCEPTION with
  the exception in `remark`). Offsets, retries and the process queue are not touched.

Field names and the alphabetical order are fastjson's (RocketMQ 4.9.8 common/protocol/body).
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
from typing import Any, Protocol

from orbitmq.client.allocation import AllocateStrategy
from orbitmq.client.consume import ConcurrentConsumeService, OrderlyConsumeService, restore_retry_topic
from orbitmq.client.consumer_stats import ConsumerStats
from orbitmq.client.offset_store import OffsetStore, ReadOffsetType
from orbitmq.client.options import LitePullConsumerOptions, PushConsumerOptions
from orbitmq.client.rebalance import Rebalancer
from orbitmq.client.results import (
    ConsumeConcurrentlyContext,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
    concurrently_status,
    orderly_status,
)
from orbitmq.client.subscription import Subscription
from orbitmq.common.clock import Clock
from orbitmq.message.model import MessageExt, MessageQueue
from orbitmq.protocol import java_json
from orbitmq.protocol.body_fields import mq_key


class _Consumer(Protocol):
    """What the answers read of either consumer (a Protocol: the consumers import this module)."""

    group: str
    clock: Clock
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    consume_timestamp_ms: int
    allocate_strategy: AllocateStrategy
    pull_threshold_size_for_queue: int
    start_timestamp_ms: int

    def subscriptions(self) -> list[Subscription]: ...


class PushConsumerView(_Consumer, Protocol):
    options: PushConsumerOptions
    rebalancer: Rebalancer | None
    offset_store: OffsetStore | None
    consumer_stats: ConsumerStats
    consume_service: ConcurrentConsumeService | OrderlyConsumeService | None

    @property
    def orderly(self) -> bool: ...

    @property
    def max_reconsume(self) -> int: ...


class LitePullConsumerView(_Consumer, Protocol):
    options: LitePullConsumerOptions


# CMResult by the listener's answer (None: one the client cannot read).
_CM_RESULT: dict[ConsumeStatus | ConsumeOrderlyStatus | None, str] = {
    ConsumeStatus.CONSUME_SUCCESS: "CR_SUCCESS",
    ConsumeOrderlyStatus.SUCCESS: "CR_SUCCESS",
    ConsumeStatus.RECONSUME_LATER: "CR_LATER",
    ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: "CR_LATER",
    None: "CR_RETURN_NULL",
}


def _wall_ms(monotonic_s: float, now_mono: float, now_ms: int) -> int:
    """A monotonic instant as epoch ms (ProcessQueueInfo carries wall-clock timestamps)."""
    return 0 if monotonic_s <= 0 else int(now_ms - (now_mono - monotonic_s) * 1000)


def consumer_properties(consumer: PushConsumerView) -> dict[str, str]:
    """The consumer's settings under DefaultMQPushConsumer's property names (MixAll.object2Properties)."""
    ts = time.strftime("%Y%m%d%H%M%S", time.localtime(consumer.consume_timestamp_ms / 1000))
    props = {
        "allocateMessageQueueStrategy": type(consumer.allocate_strategy).__name__,
        "consumeConcurrentlyMaxSpan": consumer.options.consume_concurrently_max_span,
        "consumeFromWhere": consumer.consume_from_where.value,
        "consumeMessageBatchMaxSize": consumer.options.consume_batch_size,
        "consumeThreadMax": consumer.options.consume_concurrency,
        "consumeThreadMin": consumer.options.consume_concurrency,
        "consumeTimestamp": ts,
        "consumerGroup": consumer.group,
        "maxReconsumeTimes": consumer.max_reconsume,
        "messageModel": consumer.message_model.value,
        "pullBatchSize": consumer.options.pull_batch_size,
        "pullInterval": int(consumer.options.pull_interval * 1000),
        "pullThresholdForQueue": consumer.options.pull_threshold_for_queue,
        "pullThresholdSizeForQueue": consumer.pull_threshold_size_for_queue // (1024 * 1024),
        "suspendCurrentQueueTimeMillis": int(consumer.options.suspend_current_queue_time * 1000),
        "unitMode": "false",
        "PROP_CONSUMEORDERLY": str(consumer.orderly).lower(),
        "PROP_THREADPOOL_CORE_SIZE": consumer.options.consume_concurrency,
        "PROP_CONSUMER_START_TIMESTAMP": consumer.start_timestamp_ms,
    }
    return {k: str(v) for k, v in props.items()}


def stack_dump() -> str:
    """What `jstack` carries for a Python client: every thread's stack and the loop's tasks."""
    parts = []
    for thread_id, frame in sys._current_frames().items():
        parts.append(f"Thread {thread_id}:\n" + "".join(traceback.format_stack(frame)))
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:
        tasks = set()
    parts += [f"Task {t.get_name()}: {t.get_coro()!r}" for t in sorted(tasks, key=lambda t: t.get_name())]
    return "\n".join(parts)


async def running_info(consumer: PushConsumerView, extra: dict[str, str], *, jstack: bool) -> bytes:
    """ConsumerRunningInfo JSON; `extra` adds the client instance's PROP_* keys."""
    props = consumer_properties(consumer)
    props.update(extra)
    now_mono, now_ms = consumer.clock.monotonic(), consumer.clock.now_ms()
    mq_table: dict[Any, Any] = {}
    rebalancer, store = consumer.rebalancer, consumer.offset_store
    if rebalancer is not None:
        for mq, pq in sorted(rebalancer.process_queues.items()):
            commit = await store.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY) if store is not None else -1
            cmin, cmax, ccount, tmin, tmax, tcount = pq.cache_info()
            mq_table[mq_key(mq)] = {
                "cachedMsgCount": ccount,
                "cachedMsgMaxOffset": cmax,
                "cachedMsgMinOffset": cmin,
                "cachedMsgSizeInMiB": pq.msg_size // (1024 * 1024),
                "commitOffset": commit,
                "droped": pq.dropped,  # sic: RocketMQ's property name
                "lastConsumeTimestamp": _wall_ms(pq.last_consume_time, now_mono, now_ms),
                "lastLockTimestamp": _wall_ms(pq.last_lock_time, now_mono, now_ms),
                "lastPullTimestamp": _wall_ms(pq.last_pull_time, now_mono, now_ms),
                "locked": pq.locked,
                "transactionMsgCount": tcount,
                "transactionMsgMaxOffset": tmax,
                "transactionMsgMinOffset": tmin,
                "tryUnlockTimes": pq.try_unlock_times,
            }
    subs = consumer.subscriptions()
    body: dict[str, Any] = {}
    if jstack:
        body["jstack"] = stack_dump()
    body["mqTable"] = mq_table
    body["properties"] = dict(sorted(props.items()))
    body["statusTable"] = {s.topic: consumer.consumer_stats.status(s.topic) for s in sorted(subs, key=_topic)}
    body["subscriptionSet"] = [s.to_json_dict() for s in sorted(subs, key=_topic)]
    return java_json.dumps(body, string_keys=False)


async def lite_pull_running_info(consumer: LitePullConsumerView, extra: dict[str, str]) -> bytes:
    """A lite pull consumer's ConsumerRunningInfo: as RocketMQ's DefaultLitePullConsumerImpl, its settings
    (DefaultLitePullConsumer's names) and subscriptions only; no process queues or consume status."""
    ts = time.strftime("%Y%m%d%H%M%S", time.localtime(consumer.consume_timestamp_ms / 1000))
    props: dict[str, Any] = {
        "allocateMessageQueueStrategy": type(consumer.allocate_strategy).__name__,
        "autoCommit": str(consumer.options.auto_commit).lower(),
        "autoCommitIntervalMillis": int(consumer.options.auto_commit_interval * 1000),
        "brokerSuspendMaxTimeMillis": consumer.options.broker_suspend_ms,
        "consumeFromWhere": consumer.consume_from_where.value,
        "consumeMaxSpan": consumer.options.consume_max_span,
        "consumeTimestamp": ts,
        "consumerGroup": consumer.group,
        "messageModel": consumer.message_model.value,
        "pollTimeoutMillis": int(consumer.options.poll_timeout * 1000),
        "pullBatchSize": consumer.options.pull_batch_size,
        "pullThresholdForAll": consumer.options.pull_threshold_for_all,
        "pullThresholdForQueue": consumer.options.pull_threshold_for_queue,
        "pullThresholdSizeForQueue": consumer.pull_threshold_size_for_queue // (1024 * 1024),
        "PROP_CONSUMER_START_TIMESTAMP": consumer.start_timestamp_ms,
    }
    props.update(extra)
    subs = sorted(consumer.subscriptions(), key=_topic)
    body = {
        "mqTable": {},
        "properties": {k: str(v) for k, v in sorted(props.items())},
        "statusTable": {},
        "subscriptionSet": [s.to_json_dict() for s in subs],
    }
    return java_json.dumps(body)


def _topic(sub: Any) -> str:
    return str(sub.topic)


async def consume_directly(consumer: PushConsumerView, msg: MessageExt, broker_name: str) -> bytes:
    """ConsumeMessageDirectlyResult JSON after running the listener once on `msg`."""
    service = consumer.consume_service
    if service is None:
        raise RuntimeError("the consumer is not started")
    msgs = [msg]
    restore_retry_topic(msgs, consumer.group)
    mq = MessageQueue(msg.topic, broker_name, msg.queue_id)
    orderly = consumer.orderly
    context: ConsumeOrderlyContext | ConsumeConcurrentlyContext = (
        ConsumeOrderlyContext(mq) if orderly else ConsumeConcurrentlyContext(mq)
    )
    remark = None
    began = time.monotonic()
    try:
        answer = await service.runner.call(msgs, context)
    except Exception as exc:
        result = "CR_THROW_EXCEPTION"
        remark = f"{type(exc).__name__}: {exc}"
    else:
        status = orderly_status(answer) if orderly else concurrently_status(answer)
        result = _CM_RESULT[status]
    spent = int((time.monotonic() - began) * 1000)
    auto_commit = context.auto_commit if isinstance(context, ConsumeOrderlyContext) else True
    body: dict[str, Any] = {"autoCommit": auto_commit, "consumeResult": result, "order": orderly}
    if remark is not None:
        body["remark"] = remark
    body["spentTimeMills"] = spent
    return java_json.dumps(body)
