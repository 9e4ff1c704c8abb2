"""SEND_MESSAGE (V1 header), SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK.

Send path (RocketMQ's SendMessageProcessor): broker write permission, topic name and forbidden system
topics, topic lookup or auto-creation from the template (TBW102), queue id range, %RETRY% topics turning
into %DLQ% after max reconsume times, delayed messages redirected to SCHEDULE_TOPIC_XXXX, CLUSTER property
added and WAIT removed (single messages), the store append, then for SYNC_FLUSH the wait for the group
commit. Response: msgId (offset id), queueId, queueOffset, plus MSG_REGION and TRACE_ON.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Final

from orbitmq.broker.processors.base import BadRequest, error, guarded
from orbitmq.broker.processors.flush_waits import FlushWaits
from orbitmq.broker.processors.send_back import send_back
from orbitmq.broker.processors.send_request import (
    DELAY_ENTRY,
    TIMER_MARK,
    TRAN_MSG_ENTRY,
    V1_NAMES,
    V2_NAMES,
    born_host,
    fast_v2_header,
    plain_properties,
    send_header,
)
from orbitmq.broker.processors.send_results import STORED_CODES, put_refusal
from orbitmq.broker.processors.send_waits import SendWaits
from orbitmq.broker.topics import (
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    TopicConfig,
    dlq_topic,
    validate_topic_name,
)
from orbitmq.message import properties as P
from orbitmq.message.batch import batch_wait_store_msg_ok
from orbitmq.message.hashing import tags_code as compute_tags_code
from orbitmq.message.property_string import decode_properties, encode_properties, find_property_key
from orbitmq.message.sysflag import (
    MULTI_TAGS_FLAG,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    transaction_type,
)
from orbitmq.message.validation import valid_topics
from orbitmq.protocol.codes import RPC_TYPE, RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.java_values import parse_boolean
from orbitmq.protocol.perm import PERM_READ, PERM_WRITE, is_writeable
from orbitmq.protocol.send_reply import SendReply, SendReplyTemplate
from orbitmq.store.batch_append import scan_batch
from orbitmq.store.config import SYNC_FLUSH
from orbitmq.store.message_store import MessageStore
from orbitmq.store.results import PutMessageResult, PutMessageStatus
from orbitmq.store.store_message import StoreBatch, StoreMessage
from orbitmq.store.timer_names import START_DELIVER_TIME
from orbitmq.transport.connection import Connection
from orbitmq.transport.dispatch import Later

if TYPE_CHECKING:
    from orbitmq.broker.config import BrokerConfig
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer

V3_4_9: Final = 121
TOPIC_NOT_EXIST_HELP: Final = "http://rocketmq.apache.org/docs/faq/"
# The constants the send path reads per request, as Final statics of this module (compiled: no lookup in
# the module dict per use).
_RETRY_PREFIX: Final = RETRY_GROUP_TOPIC_PREFIX
_NOT_ALLOWED_SEND_TOPICS: Final = NOT_ALLOWED_SEND_TOPICS
_SYNC_FLUSH: Final = SYNC_FLUSH
_SEND_MESSAGE_V1: Final[int] = RequestCode.SEND_MESSAGE
_SUCCESS: Final[int] = ResponseCode.SUCCESS
_VALID_TOPICS: Final = valid_topics
# find_property_key's search keys for the properties the store indexes
_TAGS_KEY: Final = "\x02" + P.TAGS + "\x01"
_KEYS_KEY: Final = "\x02" + P.KEYS + "\x01"
_UNIQ_KEY_KEY: Final = "\x02" + P.UNIQ_KEY + "\x01"
# "NAME\x01" of TAGS and KEYS: often absent, and then one substring test answers without a search call.
_TAGS_ENTRY: Final = P.TAGS + "\x01"
_KEYS_ENTRY: Final = P.KEYS + "\x01"


class _BrokerFields:
    """The broker config's values a send reads, as native fields, for one generation of the config (an
    interpreted object: each attribute read is a lookup), with the success answer's ext fields encoded."""

    __slots__ = ("cluster", "gather_min", "generation", "reply_template", "role", "writable")

    def __init__(self, config: BrokerConfig) -> None:
        self.generation = config.generation
        self.role = config.broker_role
        self.cluster = config.broker_cluster_name
        self.writable = is_writeable(config.broker_permission)
        self.gather_min = config.send_gather_min_requests
        trace_on = "true" if config.trace_on else "false"
        self.reply_template = SendReplyTemplate(((P.MSG_REGION, config.region_id), (P.TRACE_ON, trace_on)))


class _TopicCheck:
    """What a send reads of a topic's config, as native fields. Valid while the topic table holds the
    same (frozen) TopicConfig object: an update puts a new one."""

    __slots__ = ("config", "multi_tag", "queue_limit", "writable", "write_queue_nums")

    def __init__(self, tc: TopicConfig) -> None:
        self.config = tc
        self.writable = is_writeable(tc.perm)
        self.queue_limit = max(tc.read_queue_nums, tc.write_queue_nums)
        self.write_queue_nums = tc.write_queue_nums
        self.multi_tag = tc.topic_filter_type == "MULTI_TAG"


def register(server: RemotingServer, app: BrokerContext) -> None:
    processor = SendProcessor(app)
    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        # Not `guarded`: process_send answers its own BadRequests, and without a coroutine when the
        # store needs no wait (the dispatcher sends a returned RemotingCommand at once).
        server.register(code, processor.process_send)
    server.register(RequestCode.CONSUMER_SEND_MSG_BACK, guarded(processor.process_send_back))


class SendProcessor:
    def __init__(self, app: BrokerContext) -> None:
        self.app = app
        # The app's config, topic table and stats are the same objects for its whole life: held here,
        # each per-send read is a native attribute, not a lookup through the (interpreted) app object.
        self._config = app.config
        self._topics = app.topics
        # (the manager's table dict is never rebound: held, it is a native read per send)
        self._topic_table: dict[str, TopicConfig] = app.topics.table
        self._topic_checks: dict[str, _TopicCheck] = {}
        self._stats = app.stats
        # The store exists from the app's start on (after the processors are registered) and for the
        # processor's whole life (a restarted app registers new ones): read through the app's property
        # (an interpreted call) once, at the first send.
        self._store: MessageStore | None = None
        self._waits = SendWaits(app)  # the flush and slave waits (send_waits.py)
        self._group_commit: FlushWaits[Later] | None = None  # SYNC_FLUSH without a slave to wait for
        # What a send reads of the broker config, re-read when the config changed (its generation).
        self._fields = _BrokerFields(app.config)
        self._sync_flush: bool | None = None  # the store's flushDiskType is SYNC_FLUSH (read at first use)

    # ---------------------------------------------------------------------------------- send
    def process_send(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand | Later | Awaitable[RemotingCommand]:
        """The answer, or an awaitable of it when the sender waits for a flush or a slave."""
        try:
            return self._send(conn, request)
        except BadRequest as bad:
            return error(bad.code, bad.remark)

    def _send(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand | Later | Awaitable[RemotingCommand]:
        app = self.app
        ext = request.ext_fields
        # V2 requests carry the short names a..n (V1 the long ones); both read through one name table.
        v2 = request.code != _SEND_MESSAGE_V1 and "b" in ext
        header = fast_v2_header(ext) if v2 else None
        if header is None:
            header = send_header(ext, V2_NAMES if v2 else V1_NAMES)
        (
            producer_group,
            topic,
            default_topic,
            default_queue_nums,
            queue_id,
            sys_flag,
            born_timestamp,
            flag,
            properties_text,
            reconsume_times,
            max_reconsume_times,
            batch,
        ) = header
        if app.stopping:
            raise BadRequest(ResponseCode.SERVICE_NOT_AVAILABLE, "the broker is shutting down")
        broker = self._broker_fields()
        if broker.role == "SLAVE":
            raise BadRequest(
                ResponseCode.SERVICE_NOT_AVAILABLE, "the broker is a slave, sending is forbidden"
            )
        topic_check = self.check_topic(
            conn,
            topic=topic,
            default_topic=default_topic,
            default_queue_nums=default_queue_nums,
            sys_flag=sys_flag,
            queue_id=queue_id,
            producer_group=producer_group,
        )
        if queue_id < 0:
            queue_id = random.randrange(max(topic_check.write_queue_nums, 1))
        if topic_check.multi_tag:
            sys_flag |= MULTI_TAGS_FLAG
        body = request.body
        host = born_host(conn)
        store = self._store
        if store is None:
            store = self._store = app.store
        cluster = broker.cluster
        if batch:
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                raise BadRequest(
                    ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group " + topic
                )
            if transaction_type(sys_flag) != TRANSACTION_NOT_TYPE:
                raise BadRequest(ResponseCode.MESSAGE_ILLEGAL, "batch message does not support transaction")
            props = decode_properties(properties_text)
            props[P.CLUSTER] = cluster
            try:
                scanned = scan_batch(body)  # checked once, described by offsets (store/batch_append.py)
            except Exception as exc:
                raise BadRequest(
                    ResponseCode.MESSAGE_ILLEGAL, f"the batch body is malformed: {exc}"
                ) from None
            if not scanned.count:
                raise BadRequest(ResponseCode.MESSAGE_ILLEGAL, "the batch is empty")
            store_batch = StoreBatch(
                topic=topic,
                queue_id=queue_id,
                sys_flag=sys_flag,
                born_timestamp=born_timestamp,
                born_host=host,
                entries=(),
                scanned=scanned,
                properties=encode_properties(props),
                reconsume_times=reconsume_times,
            )
            result = store.put_messages(store_batch)
            wait = batch_wait_store_msg_ok(properties_text)
        else:
            if not body:
                raise BadRequest(ResponseCode.MESSAGE_ILLEGAL, "the message body is empty")
            if (
                not topic.startswith(_RETRY_PREFIX)
                and DELAY_ENTRY not in properties_text
                and TRAN_MSG_ENTRY not in properties_text
                and TIMER_MARK not in properties_text
                and START_DELIVER_TIME not in properties_text
            ):
                # The common case: only WAIT goes and CLUSTER comes; no property map needed.
                stored, wait = plain_properties(properties_text, cluster)
                result = store.put_message(
                    StoreMessage(
                        topic=topic,
                        queue_id=queue_id,
                        flag=flag,
                        body=body,
                        properties=stored,
                        sys_flag=sys_flag,
                        born_timestamp=born_timestamp,
                        born_host=host,
                        reconsume_times=reconsume_times,
                        # read here once, so the store does not decode the properties again
                        tags_code=compute_tags_code(
                            find_property_key(stored, _TAGS_KEY) if _TAGS_ENTRY in stored else None
                        ),
                        properties_read=True,
                        keys=find_property_key(stored, _KEYS_KEY) if _KEYS_ENTRY in stored else None,
                        uniq_key=find_property_key(stored, _UNIQ_KEY_KEY),
                    ),
                    # (to its consume queue after the answer left: the transport's after_turn, app.py)
                    dispatch_later=True,
                    # (a turn of many requests: the records written together, before the answers leave)
                    gather=0 < broker.gather_min <= conn.turn_size,
                )
                return self.respond(result, wait, queue_id, topic, store, later=True)
            props = decode_properties(properties_text)
            wait = props.pop(P.WAIT, "true") != "false"
            props[P.CLUSTER] = cluster
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                topic, queue_id = self._retry_or_dlq(
                    topic,
                    queue_id=queue_id,
                    reconsume_times=reconsume_times,
                    max_reconsume_times=max_reconsume_times,
                    version=request.version,
                    props=props,
                )
            if parse_boolean(props.get(P.TRAN_MSG)) and self._config.reject_transaction_message:
                raise BadRequest(
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{self._config.broker_name}] sending transaction message is forbidden",
                )
            if parse_boolean(props.get(P.TRAN_MSG)):
                topic, queue_id, sys_flag = app.transactions.prepare(topic, queue_id, sys_flag, props)
            else:
                topic, queue_id = app.timers.redirect(topic, queue_id, sys_flag, props)  # timer messages
                topic, queue_id = self.redirect_delayed(topic, queue_id, sys_flag, props)
            msg = StoreMessage(
                topic=topic,
                queue_id=queue_id,
                flag=flag,
                body=body,
                properties=encode_properties(props),
                sys_flag=sys_flag,
                born_timestamp=born_timestamp,
                born_host=host,
                reconsume_times=reconsume_times,
            )
            result = store.put_message(msg)
        return self.respond(result, wait, queue_id, topic, store, later=True)

    def check_topic(
        self,
        conn: Connection,
        *,
        topic: str,
        default_topic: str,
        default_queue_nums: int,
        sys_flag: int,
        queue_id: int,
        producer_group: str,
    ) -> _TopicCheck:
        # (validate_topic_name only for a name not known valid: an interpreted call costs more than the check)
        if not self._fields.writable:  # (read by _send for this send)
            raise BadRequest(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self._config.broker_ip1}] sending message is forbidden",
            )
        reason = None if topic in _VALID_TOPICS else validate_topic_name(topic)
        if reason is not None:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, reason)
        if topic in _NOT_ALLOWED_SEND_TOPICS:
            raise BadRequest(ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        tc = self._topic_table.get(topic)  # (TopicConfigManager.select, without its call)
        if tc is None:
            tc = self._topics.create_in_send(topic, default_topic, default_queue_nums, 0)
            if tc is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc = self._topics.create_in_send_back(topic, 1, PERM_READ | PERM_WRITE)
            if tc is None:
                raise BadRequest(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{topic}] not exist, apply first please! {TOPIC_NOT_EXIST_HELP}",
                )
        check = self._topic_checks.get(topic)
        if check is None or check.config is not tc:
            check = self._remember_topic(topic, tc)
        if not check.writable:
            raise BadRequest(
                ResponseCode.NO_PERMISSION,
                f"the topic[{topic}] sending message is forbidden",
            )
        if queue_id >= check.queue_limit:
            raise BadRequest(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{queue_id}] is illegal, {tc} Producer: {conn.remote_address}",
            )
        return check

    def _remember_topic(self, topic: str, tc: TopicConfig) -> _TopicCheck:
        checks = self._topic_checks
        # Entries exist only for topics that were in the table: bounded by its size, plus what deleted
        # or replaced topics left behind.
        if len(checks) > 2 * len(self._topic_table) + 64:
            checks.clear()
        check = checks[topic] = _TopicCheck(tc)
        return check

    def _retry_or_dlq(
        self,
        topic: str,
        *,
        queue_id: int,
        reconsume_times: int,
        max_reconsume_times: int | None,
        version: int,
        props: dict[str, str],
    ) -> tuple[str, int]:
        """A producer (the client's fallback) sending to %RETRY%group: to the DLQ once retries are spent."""
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        group_cfg = self.app.subscription_groups.find(group)
        if group_cfg is None:
            raise BadRequest(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
            )
        max_times = group_cfg.retry_max_times
        if version > V3_4_9 and max_reconsume_times is not None:
            max_times = max_reconsume_times
        if reconsume_times >= max_times:
            dlq = dlq_topic(group)
            self._topics.create_in_send_back(dlq, 1, PERM_READ | PERM_WRITE)
            props.pop(P.DELAY, None)
            return dlq, 0
        return topic, queue_id

    def redirect_delayed(
        self, topic: str, queue_id: int, sys_flag: int, props: dict[str, str]
    ) -> tuple[str, int]:
        """DELAY=n: park the message in SCHEDULE_TOPIC_XXXX queue n-1 with its real topic and queue kept."""
        delay = props.get(P.DELAY)
        if not delay or transaction_type(sys_flag) not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
            return topic, queue_id
        try:
            level = int(delay)
        except ValueError:
            return topic, queue_id
        if level <= 0:
            return topic, queue_id
        level = min(level, len(self.app.delay_levels_ms))
        props[P.DELAY] = str(level)
        props[P.REAL_TOPIC] = topic
        props[P.REAL_QID] = str(queue_id)
        return SCHEDULE_TOPIC, level - 1

    def respond(
        self,
        result: PutMessageResult,
        wait: bool,
        queue_id: int,
        topic: str,
        store: MessageStore | None = None,
        *,
        later: bool = False,
    ) -> RemotingCommand | Later | Awaitable[RemotingCommand]:
        """The send's answer for a put `result`: at once, or (SYNC_FLUSH, SYNC_MASTER and a sender that
        waits) an awaitable of it that resolves after the flush / the slave -- or, with `later` (the
        dispatcher's own sends), under SYNC_FLUSH alone a `Later` the group commit answers."""
        app = self.app
        status = result.status
        code: int = _SUCCESS
        if status is not PutMessageStatus.PUT_OK:  # (an enum's .name is a Python property: only here)
            stored_code = STORED_CODES.get(status.name)
            if stored_code is None:
                raise BadRequest(*put_refusal(status.name, (store or app.store).config))
            code = stored_code
        # Counted once stored (RocketMQ counts before the flush/replication wait, under the stored topic).
        self._stats.put(topic, result.msg_num, result.wrote_bytes)
        if code == _SUCCESS and wait:
            sync_master = self._broker_fields().role == "SYNC_MASTER"
            sync_flush = self._sync_flush
            if sync_flush is None:  # (the store's config is fixed for the processor's life: read once)
                sync_flush = self._sync_flush = (store or app.store).config.flush_disk_type == _SYNC_FLUSH
            if later and not sync_master and sync_flush:
                # The group commit answers it (flush_waits.py): no coroutine or Task per send.
                waits = self._group_commit  # (held here: a native read per send)
                if waits is None:
                    waits = self._group_commit = self._waits.group_commit()
                answer = self._response(code, result, queue_id)
                return waits.add(
                    result.end_offset,
                    answer,
                    lambda: self._response(ResponseCode.FLUSH_DISK_TIMEOUT, result, queue_id),
                )
            if sync_master or sync_flush:
                return self._respond_after_wait(result, queue_id)
        return self._response(code, result, queue_id)

    async def _respond_after_wait(self, result: PutMessageResult, queue_id: int) -> RemotingCommand:
        code = await self._waits.code_after_wait(result.end_offset)
        return self._response(code, result, queue_id)

    def _broker_fields(self) -> _BrokerFields:
        fields = self._fields
        if fields.generation != self._config.generation:
            fields = self._fields = _BrokerFields(self._config)
        return fields

    def _response(self, code: int, result: PutMessageResult, queue_id: int) -> RemotingCommand:
        config = self._config
        if code == _SUCCESS:
            # The plain success: no ext dict, its header is written from the template (same bytes).
            template = self._broker_fields().reply_template
            return SendReply(code, result.msg_id, queue_id, result.queue_offset, template)
        # Built directly (not through success()): the ext dict is new, so it needs no defensive copy.
        return RemotingCommand(
            code,
            flag=RPC_TYPE,
            ext_fields={
                "msgId": result.msg_id,
                "queueId": str(queue_id),
                "queueOffset": str(result.queue_offset),
                P.MSG_REGION: config.region_id,
                P.TRACE_ON: "true" if config.trace_on else "false",
            },
        )

    # ---------------------------------------------------------------------------------- send back
    async def process_send_back(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """CONSUMER_SEND_MSG_BACK (processors/send_back.py): to %RETRY%group or %DLQ%group."""
        return await send_back(self, request)
