"""MQClientAPI: one async method per RocketMQ request a client makes, with typed results.

Each method builds the request's ext fields (fact sheet 3), sends it through the pooled
`RemotingClient`, and turns the response into a value or a `BrokerError` carrying the response code.
Name-server calls go to the current name server and fail over to the next address on connection
errors and timeouts.

This module knows the wire (codes, header names, bodies), not policy: retries across brokers, route
caching and rebalancing live in the producer, consumers and `ClientInstance`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from orbitmq.client.offset_store import OffsetNotFoundError
from orbitmq.client.results import PullResult, PullStatus, SendResult
from orbitmq.client.send_request import send_code, start_send
from orbitmq.client.send_result import int_field as _int_field
from orbitmq.client.send_result import send_result
from orbitmq.common.errors import BrokerError, ConnectError, RequestTimeoutError
from orbitmq.message import properties as P
from orbitmq.message.codec import decode_records
from orbitmq.message.model import MessageExt, MessageQueue
from orbitmq.protocol.bodies import TopicRouteData
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.client import RemotingClient
from orbitmq.transport.connection import ResponseCallback

log = logging.getLogger("orbitmq.client")

# Response codes after which the producer tries again, on another broker (DefaultMQProducer
# retryResponseCodes, plus SYSTEM_BUSY: the broker's flow control asks us to go elsewhere).
RETRYABLE_SEND_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)

_PULL_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}

# PullSysFlag bits (fact sheet 3.3).
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8
FLAG_LITE_PULL_MESSAGE = 0x10


def _ext(group_queue: tuple[str, MessageQueue] | None = None, /, **fields: object) -> dict[str, str]:
    """Ext fields as Java writes them: None omitted, booleans lowercase, everything else str(). With
    `group_queue` (a request about one queue of a group): consumerGroup, topic and queueId first, bname
    last, as Java orders them."""
    out: dict[str, str]
    if group_queue is None:
        out = {}
    else:
        group, mq = group_queue
        out = {"consumerGroup": group, "topic": mq.topic, "queueId": str(mq.queue_id)}
    for key, value in fields.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    if group_queue is not None:
        out["bname"] = group_queue[1].broker_name
    return out


def mq_to_json(mq: MessageQueue) -> dict[str, object]:
    return {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}


def mq_from_json(obj: Mapping[str, Any]) -> MessageQueue:
    return MessageQueue(str(obj["topic"]), str(obj["brokerName"]), int(obj["queueId"]))


class NamesrvUnreachableError(ConnectError):
    """No configured nameserver answered; the message names each address and why."""


def _failure_text(addr: str, exc: Exception) -> str:
    """ "127.0.0.1:9 connection refused" from "connect to 127.0.0.1:9 failed: connection refused"."""
    text = str(exc)
    prefix = f"connect to {addr} failed: "
    if text.startswith(prefix):
        return f"{addr} {text[len(prefix) :]}"
    if isinstance(exc, RequestTimeoutError):
        return f"{addr} did not answer in time"
    return text if addr in text else f"{addr} {text}"


class MQClientAPI:
    def __init__(
        self, remoting: RemotingClient, namesrv_addrs: Sequence[str], *, timeout: float = 3.0
    ) -> None:
        self.remoting = remoting
        self.namesrv_addrs = list(namesrv_addrs)
        self.timeout = timeout  # mqClientApiTimeout
        self._namesrv_index = 0

    # ---- plumbing ---------------------------------------------------------------------------

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        return await self.remoting.invoke(addr, request, self.timeout if timeout is None else timeout)

    async def invoke_namesrv(self, request: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        """Ask the current name server; on a connection failure or timeout try the others in turn."""
        if not self.namesrv_addrs:
            raise ConnectError("no name server address configured")
        failures: list[str] = []
        for attempt in range(len(self.namesrv_addrs)):
            index = (self._namesrv_index + attempt) % len(self.namesrv_addrs)
            addr = self.namesrv_addrs[index]
            try:
                # A fresh opaque per attempt: the previous connection may still hold the old one.
                attempt_request = RemotingCommand.request(request.code, request.ext_fields, request.body)
                resp = await self.invoke(addr, attempt_request, timeout)
            except (ConnectError, RequestTimeoutError) as exc:
                log.debug("name server %s failed: %s", addr, exc)
                failures.append(_failure_text(addr, exc))
                continue
            self._namesrv_index = index
            return resp
        raise NamesrvUnreachableError("cannot reach any nameserver: " + "; ".join(failures))

    @staticmethod
    def _check(resp: RemotingCommand, addr: str, *ok: int) -> None:
        if resp.code not in (ok or (ResponseCode.SUCCESS,)):
            raise BrokerError(resp.code, resp.remark, address=addr)

    # ---- name server ------------------------------------------------------------------------

    async def get_topic_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """The route, or None when the name server does not know the topic (TOPIC_NOT_EXIST)."""
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, _ext(topic=topic))
        resp = await self.invoke_namesrv(request, timeout)
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        self._check(resp, "namesrv")
        if not resp.body_length:
            return None
        return TopicRouteData.from_json(resp.body_bytes())

    async def get_broker_cluster_info(self, timeout: float | None = None) -> bytes:
        """The raw ClusterInfo JSON (fastjson, unquoted numeric keys)."""
        resp = await self.invoke_namesrv(
            RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout
        )
        self._check(resp, "namesrv")
        return resp.body_bytes()

    # ---- send -------------------------------------------------------------------------------

    async def send_message(
        self,
        addr: str,
        broker_name: str,
        body: bytes,
        header: dict[str, str],
        *,
        msg_id: str,
        timeout: float,
        batch: bool = False,
    ) -> SendResult:
        """Send one message (SEND_MESSAGE_V2, `header` from `send_header_v2`) or a batch body; a reply
        message (MSG_TYPE=reply) goes as SEND_REPLY_MESSAGE_V2, as RocketMQ's producer sends it."""
        # straight to the remoting client: one coroutine less per message than self.invoke
        request = RemotingCommand.request(send_code(header, batch), header, body)
        resp = await self.remoting.invoke(addr, request, timeout)
        return send_result(resp, addr, broker_name, header["b"], msg_id)

    def start_send_message(
        self, addr: str, body: bytes, header: dict[str, str], *, timeout: float, callback: ResponseCallback
    ) -> bool:
        """`send_message` without a coroutine: the request leaves on the pooled connection to `addr` and
        `callback(response, error)` gets the answer (`send_result.send_result` makes it a SendResult).
        False, with nothing sent, when that connection is not open (or its writes are paused)."""
        return start_send(self.remoting, addr, body, header, timeout=timeout, callback=callback)

    async def send_message_oneway(
        self, addr: str, body: bytes, header: dict[str, str], *, batch: bool = False
    ) -> None:
        # (the code by the message, as for a send with a response: a reply goes as SEND_REPLY_MESSAGE_V2)
        request = RemotingCommand.request(send_code(header, batch), header, body, oneway=True)
        await self.remoting.invoke_oneway(addr, request)

    # ---- pull -------------------------------------------------------------------------------

    async def pull_message(
        self,
        addr: str,
        *,
        group: str,
        mq: MessageQueue,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        suspend_timeout_ms: int,
        subscription: str | None,
        sub_version: int,
        expression_type: str | None,
        timeout: float,
    ) -> PullResult:
        header = _ext(
            (group, mq),
            queueOffset=offset,
            maxMsgNums=max_nums,
            sysFlag=sys_flag,
            commitOffset=commit_offset,
            suspendTimeoutMillis=suspend_timeout_ms,
            subscription=subscription,
            subVersion=sub_version,
            expressionType=expression_type,
        )
        resp = await self.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header), timeout)
        status = _PULL_STATUS.get(resp.code)  # type: ignore[call-overload]
        if status is None:
            raise BrokerError(resp.code, resp.remark, address=addr)
        result = PullResult(
            status=status,
            next_begin_offset=_int_field(resp, "nextBeginOffset"),
            min_offset=_int_field(resp, "minOffset"),
            max_offset=_int_field(resp, "maxOffset"),
            suggest_which_broker_id=_int_field(resp, "suggestWhichBrokerId"),
        )
        if status is PullStatus.FOUND and resp.body_length:
            result.body = resp.body_bytes()
            result.messages = decode_records(result.body)
            min_s, max_s = str(result.min_offset), str(result.max_offset)
            for msg in result.messages:
                msg.properties[P.MIN_OFFSET] = min_s
                msg.properties[P.MAX_OFFSET] = max_s
        return result

    async def pull_plain(
        self, addr: str, mq: MessageQueue, offset: int, *, group: str, max_nums: int, timeout: float
    ) -> PullResult:
        """One PULL_MESSAGE as tools read a queue: every tag, no offset commit, no long polling."""
        return await self.pull_message(
            addr,
            group=group,
            mq=mq,
            offset=offset,
            max_nums=max_nums,
            sys_flag=FLAG_SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_ms=0,
            subscription="*",
            sub_version=0,
            expression_type="TAG",
            timeout=timeout,
        )

    # ---- offsets ----------------------------------------------------------------------------

    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int:
        header = _ext((group, mq))
        resp = await self.invoke(addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, header))
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            raise OffsetNotFoundError(resp.code, resp.remark, address=addr)
        self._check(resp, addr)
        return _int_field(resp, "offset", -1)

    async def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        header = _ext((group, mq), commitOffset=offset)
        request = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header, oneway=oneway)
        if oneway:
            await self.remoting.invoke_oneway(addr, request)
            return
        self._check(await self.invoke(addr, request, 5.0), addr)

    async def _offset_call(
        self, code: int, addr: str, mq: MessageQueue, field: str = "offset", **extra: object
    ) -> int:
        header = _ext(topic=mq.topic, queueId=mq.queue_id, bname=mq.broker_name, **extra)
        resp = await self.invoke(addr, RemotingCommand.request(code, header))
        self._check(resp, addr)
        return _int_field(resp, field)

    async def get_max_offset(self, addr: str, mq: MessageQueue) -> int:
        return await self._offset_call(RequestCode.GET_MAX_OFFSET, addr, mq)

    async def get_min_offset(self, addr: str, mq: MessageQueue) -> int:
        return await self._offset_call(RequestCode.GET_MIN_OFFSET, addr, mq)

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self._offset_call(
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, addr, mq, timestamp=timestamp_ms
        )

    # ---- clients and groups -----------------------------------------------------------------

    async def heartbeat(self, addr: str, heartbeat_json: bytes) -> int:
        """Send HeartbeatData; returns the broker's version (the response's version field)."""
        resp = await self.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT, body=heartbeat_json))
        self._check(resp, addr)
        return resp.version

    async def unregister_client(
        self,
        addr: str,
        client_id: str,
        *,
        producer_group: str | None = None,
        consumer_group: str | None = None,
    ) -> None:
        header = _ext(clientID=client_id, producerGroup=producer_group, consumerGroup=consumer_group)
        resp = await self.invoke(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header))
        self._check(resp, addr)

    async def check_client_config(self, addr: str, client_id: str, group: str, subscription: Any) -> None:
        """CHECK_CLIENT_CONFIG: may this broker filter by the subscription (a SQL92 one)? Raises
        BrokerError with the broker's reason when not."""
        body = orjson.dumps({"clientId": client_id, "group": group, "subscriptionData": subscription})
        resp = await self.invoke(addr, RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=body))
        self._check(resp, addr)

    async def get_consumer_id_list(self, addr: str, group: str) -> list[str]:
        request = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, _ext(consumerGroup=group))
        resp = await self.invoke(addr, request)
        self._check(resp, addr)
        if not resp.body_length:
            return []
        return [str(cid) for cid in orjson.loads(resp.body_bytes()).get("consumerIdList") or []]

    async def consumer_send_message_back(
        self,
        addr: str,
        msg: MessageExt,
        group: str,
        *,
        delay_level: int,
        max_reconsume_times: int,
        broker_name: str | None = None,
        timeout: float = 5.0,
    ) -> None:
        header = _ext(
            offset=msg.commit_log_offset,
            group=group,
            delayLevel=delay_level,
            originMsgId=msg.msg_id,
            originTopic=msg.topic,
            unitMode=False,
            maxReconsumeTimes=max_reconsume_times,
            bname=broker_name,
        )
        resp = await self.invoke(
            addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header), timeout
        )
        self._check(resp, addr)

    # ---- orderly locks ----------------------------------------------------------------------

    @staticmethod
    def _lock_body(group: str, client_id: str, mqs: Iterable[MessageQueue]) -> bytes:
        return orjson.dumps(
            {"clientId": client_id, "consumerGroup": group, "mqSet": [mq_to_json(mq) for mq in sorted(mqs)]}
        )

    async def lock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue], timeout: float = 1.0
    ) -> set[MessageQueue]:
        body = self._lock_body(group, client_id, mqs)
        resp = await self.invoke(addr, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=body), timeout)
        self._check(resp, addr)
        if not resp.body_length:
            return set()
        return {mq_from_json(o) for o in orjson.loads(resp.body_bytes()).get("lockOKMQSet") or []}

    async def unlock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue], *, oneway: bool = False
    ) -> None:
        body = self._lock_body(group, client_id, mqs)
        request = RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=body, oneway=oneway)
        if oneway:
            await self.remoting.invoke_oneway(addr, request)
            return
        self._check(await self.invoke(addr, request, 1.0), addr)

    # ---- transactions -----------------------------------------------------------------------

    async def end_transaction_oneway(
        self, addr: str, header: Mapping[str, str], remark: str | None = None
    ) -> None:
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, header, oneway=True)
        request.remark = remark
        await self.remoting.invoke_oneway(addr, request)

    # ---- messages by id / key ---------------------------------------------------------------

    async def view_message(self, addr: str, physical_offset: int, timeout: float | None = None) -> MessageExt:
        request = RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, _ext(offset=physical_offset))
        resp = await self.invoke(addr, request, timeout)
        self._check(resp, addr)
        messages = decode_records(resp.body_bytes())
        if not messages:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "empty body for VIEW_MESSAGE_BY_ID", address=addr)
        return messages[0]

    async def query_message(
        self,
        addr: str,
        topic: str,
        key: str,
        *,
        max_num: int,
        begin_ms: int,
        end_ms: int,
        unique_key: bool = False,
    ) -> list[MessageExt]:
        header = _ext(topic=topic, key=key, maxNum=max_num, beginTimestamp=begin_ms, endTimestamp=end_ms)
        header["_UNIQUE_KEY_QUERY"] = "true" if unique_key else "false"
        resp = await self.invoke(addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, header), 15.0)
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        self._check(resp, addr)
        return decode_records(resp.body_bytes())

    # ---- topics (used by tests, tools and auto-creation) ------------------------------------

    async def create_topic(
        self,
        addr: str,
        topic: str,
        *,
        read_queue_nums: int = 4,
        write_queue_nums: int = 4,
        perm: int = 6,
        default_topic: str = "TBW102",
        topic_filter_type: str = "SINGLE_TAG",
        topic_sys_flag: int = 0,
        order: bool = False,
    ) -> None:
        header = _ext(
            topic=topic,
            defaultTopic=default_topic,
            readQueueNums=read_queue_nums,
            writeQueueNums=write_queue_nums,
            perm=perm,
            topicFilterType=topic_filter_type,
            topicSysFlag=topic_sys_flag,
            order=order,
        )
        resp = await self.invoke(
            addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), 10.0
        )
        self._check(resp, addr)
