"""TransactionalMessageService: the broker's half/op bookkeeping (RocketMQ's TransactionalMessageService
and EndTransactionProcessor logic, fact sheet 10).

Synchronous: every call runs to completion on the broker's loop, so no END_TRANSACTION can interleave
with a check pass. It knows the store and the topic/offset tables, not sockets or channels.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from orbitmq.broker.transaction.half import (
    CHECK_GROUP,
    CHECK_MAX_TIME_TOPIC,
    HALF_QUEUE_ID,
    HALF_TOPIC,
    OP_HALF_TOPIC,
    HalfMessage,
    op_half_offset,
    op_message,
    to_half,
)
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message import properties as P
from orbitmq.message.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.perm import PERM_READ_WRITE
from orbitmq.store.message_store import MessageStore
from orbitmq.store.results import GetMessageStatus, PutMessageResult, PutMessageStatus
from orbitmq.store.store_message import StoreMessage

log = logging.getLogger("orbitmq.broker.transaction")

BATCH = 32
# END_TRANSACTION requests already applied, by half physical offset: a repeated END is answered SUCCESS
# without storing the final message twice (bounded; an END repeated after this many others is applied).
ENDED_MEMORY = 100_000

# Store answers about the message itself (retrying cannot help).
_POISON_STATUSES = frozenset({PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED})


class _PoisonHalf(Exception):
    """A half message the check service can never re-append."""


_STORED = (
    PutMessageStatus.PUT_OK,
    PutMessageStatus.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE,
)
_PUT_ERRORS = {
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
}


class TopicTable(Protocol):
    """What the service needs of the broker's topic table (TopicConfigManager satisfies it)."""

    def create_in_send_back(self, topic: str, queue_nums: int, perm: int, sys_flag: int = 0) -> object: ...


class OffsetTable(Protocol):
    """Where check progress is kept (ConsumerOffsetManager satisfies it)."""

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None: ...

    def query_offset(self, group: str, topic: str, queue_id: int) -> int: ...


@dataclass(slots=True)
class TransactionConfig:
    """BrokerConfig's transaction settings (fact sheet 10.4 defaults), by their RocketMQ names."""

    check_interval_ms: int = 60_000  # transactionCheckInterval
    timeout_ms: int = 6_000  # transactionTimeOut
    check_max: int = 15  # transactionCheckMax
    file_reserved_hours: int = 72  # fileReservedTime: half messages older than the log are dropped

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, file_reserved_hours: int = 72) -> TransactionConfig:
        """Reads transactionCheckInterval / transactionTimeOut / transactionCheckMax; ValueError on junk."""
        config = cls(file_reserved_hours=file_reserved_hours)
        for name, attr in (
            ("transactionCheckInterval", "check_interval_ms"),
            ("transactionTimeOut", "timeout_ms"),
            ("transactionCheckMax", "check_max"),
        ):
            raw = props.get(name)
            if raw is None or not raw.strip():
                continue
            try:
                value = int(raw.strip())
            except ValueError:
                raise ValueError(f"broker config {name}={raw!r}: not an integer") from None
            if value <= 0:
                raise ValueError(f"broker config {name}={raw!r}: must be positive")
            setattr(config, attr, value)
        return config


@dataclass(slots=True)
class EndResult:
    code: int
    remark: str | None = None


@dataclass(slots=True)
class CheckPass:
    """What one check pass did; `requests` are (producer group, CHECK_TRANSACTION_STATE) to deliver."""

    requests: list[tuple[str, RemotingCommand]]
    skipped_done: int = 0
    discarded: int = 0
    half_offset: int = 0
    op_offset: int = 0


class TransactionalMessageService:
    """The half/op bookkeeping of transactional messages:

    - `prepare` (send path, TRAN_MSG=true) turns a message into a half message.
    - `end_transaction` (END_TRANSACTION) commits (stores the final message, then the op record) or rolls
      back (op record only) after checking the request against the stored half record.
    - `check_once` (the check service's one pass) walks the half queue from its progress offset: half
      messages with an op record are skipped; those checked `check_max` times (or older than the store's
      retention) go to TRANS_CHECK_MAX_TIME_TOPIC; those older than `timeout_ms` (by born time) are
      re-appended with TRANSACTION_CHECK_TIMES + 1 and a CHECK_TRANSACTION_STATE request is prepared for
      the copy (returned: the check service delivers it). The walk stops at the first message that is too
      young or was stored after the pass began. Progress offsets are CID_RMQ_SYS_TRANS consumer offsets of
      the half and op queues, so they persist with consumerOffset.json and reach the slave.
    """

    def __init__(
        self,
        store: MessageStore,
        topics: TopicTable,
        offsets: OffsetTable,
        *,
        config: TransactionConfig | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.topics = topics
        self.offsets = offsets
        self.config = config or TransactionConfig()
        self.clock = clock
        self._ended: OrderedDict[int, None] = OrderedDict()
        self.stats = {
            "prepared": 0,
            "committed": 0,
            "rolled_back": 0,
            "checked": 0,
            "discarded": 0,
            "skipped": 0,
        }

    # ---------------------------------------------------------------------------------- send path
    def prepare(
        self, topic: str, queue_id: int, sys_flag: int, props: dict[str, str]
    ) -> tuple[str, int, int]:
        """A TRAN_MSG send: returns the (topic, queue id, sysFlag) to store the half message with."""
        self.topics.create_in_send_back(HALF_TOPIC, 1, PERM_READ_WRITE)
        self.stats["prepared"] += 1
        return to_half(topic, queue_id, sys_flag, props)

    # ---------------------------------------------------------------------------- END_TRANSACTION
    def end_transaction(
        self,
        *,
        producer_group: str,
        tran_state_table_offset: int,
        commit_log_offset: int,
        commit_or_rollback: int,
        from_check: bool = False,
    ) -> EndResult | None:
        """Apply a producer's decision; None (no answer) for "unknown" and unrecognised decisions."""
        if commit_or_rollback not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            return None
        if commit_log_offset in self._ended:
            return EndResult(ResponseCode.SUCCESS)
        raw = self.store.select_one_message_by_offset(commit_log_offset)
        if raw is None:
            return EndResult(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        try:
            half = HalfMessage.parse(raw)
        except RemoteProtocolError as exc:
            return EndResult(ResponseCode.SYSTEM_ERROR, f"Find prepared transaction message failed: {exc}")
        finally:
            del raw
        problem = self._mismatch(half, producer_group, tran_state_table_offset, commit_log_offset)
        if problem is not None:
            return EndResult(ResponseCode.SYSTEM_ERROR, problem)
        if commit_or_rollback == TRANSACTION_COMMIT_TYPE:
            result = self._put(half.committed())
            if result.status not in _STORED:
                code = _PUT_ERRORS.get(result.status, ResponseCode.SYSTEM_ERROR)
                return EndResult(code, f"storing the committed message failed: {result.status.name}")
            self.stats["committed"] += 1
        else:
            self.stats["rolled_back"] += 1
        self._write_op(half)
        self._remember_ended(commit_log_offset)
        log.debug(
            "transaction %s %s (half offset %d, from check %s)",
            half.uniq_key,
            "committed" if commit_or_rollback == TRANSACTION_COMMIT_TYPE else "rolled back",
            commit_log_offset,
            from_check,
        )
        return EndResult(ResponseCode.SUCCESS)

    @staticmethod
    def _mismatch(half: HalfMessage, group: str, queue_offset: int, physical_offset: int) -> str | None:
        if half.topic != HALF_TOPIC:
            return f"the message at commit log offset {physical_offset} is not a half message"
        if half.producer_group != group:
            return "The producer group wrong"
        if half.queue_offset != queue_offset:
            return "The transaction state table offset wrong"
        if half.physical_offset != physical_offset:
            return "The commit log offset wrong"
        return None

    def _remember_ended(self, physical_offset: int) -> None:
        self._ended[physical_offset] = None
        if len(self._ended) > ENDED_MEMORY:
            self._ended.popitem(last=False)

    def _put(self, msg: StoreMessage) -> PutMessageResult:
        return self.store.put_message(msg)

    def _write_op(self, half: HalfMessage) -> None:
        self.topics.create_in_send_back(OP_HALF_TOPIC, 1, PERM_READ_WRITE)
        op = op_message(half.queue_offset, store_host=self.store.store_host_bytes, now_ms=self.clock.now_ms())
        result = self._put(op)
        if result.status not in _STORED:
            # The final message is stored; without the op the check service will ask the producer again.
            log.warning(
                "writing the op record for half offset %d failed: %s", half.queue_offset, result.status
            )

    # --------------------------------------------------------------------------------------- check
    def _progress(self, topic: str) -> int:
        offset = self.offsets.query_offset(CHECK_GROUP, topic, HALF_QUEUE_ID)
        if offset < 0:
            offset = self.store.get_min_offset_in_queue(topic, HALF_QUEUE_ID)
        return offset

    def _records(self, topic: str, start: int) -> Iterator[tuple[int, bytes]]:
        """(queue offset, raw record copy) from `start` to the end of the queue."""
        offset = start
        while True:
            result = self.store.get_messages(CHECK_GROUP, topic, HALF_QUEUE_ID, offset, BATCH)
            if result.status is GetMessageStatus.OFFSET_TOO_SMALL:
                offset = result.next_begin_offset  # retention removed the head of the queue
                continue
            if result.status is not GetMessageStatus.FOUND:
                if result.next_begin_offset > offset and result.status is GetMessageStatus.OFFSET_FOUND_NULL:
                    offset = result.next_begin_offset
                    continue
                return
            # Copy out of the mapped segments at once: nothing may pin them while we append.
            records = [(q, bytes(b)) for q, b in zip(result.queue_offsets, result.buffers, strict=True)]
            result.buffers.clear()
            yield from records
            offset = result.next_begin_offset

    def check_once(self) -> CheckPass:
        """One pass of the check service over the half queue (see the module docstring)."""
        config = self.config
        started = self.clock.now_ms()
        half_start = self._progress(HALF_TOPIC)
        op_start = self._progress(OP_HALF_TOPIC)
        ops: list[tuple[int, int]] = []  # (op queue offset, half queue offset it closes)
        for op_offset, raw in self._records(OP_HALF_TOPIC, op_start):
            try:
                closed = op_half_offset(raw)
            except RemoteProtocolError:
                closed = None
            ops.append((op_offset, -1 if closed is None else closed))
        done = {closed for _, closed in ops if closed >= half_start}
        out = CheckPass([])
        next_half = half_start
        for queue_offset, raw in self._records(HALF_TOPIC, half_start):
            if queue_offset in done:
                out.skipped_done += 1
                next_half = queue_offset + 1
                continue
            try:
                half = HalfMessage.parse(raw)
            except RemoteProtocolError as exc:
                log.warning("half message at queue offset %d is unreadable, skipped: %s", queue_offset, exc)
                next_half = queue_offset + 1
                continue
            now = self.clock.now_ms()
            if half.check_times >= config.check_max or (
                now - half.store_timestamp > config.file_reserved_hours * 3_600_000
            ):
                self._discard(half)
                out.discarded += 1
                next_half = queue_offset + 1
                continue
            if half.store_timestamp >= started:
                break
            immunity = config.timeout_ms
            raw_immunity = half.properties.get(P.CHECK_IMMUNITY_TIME_IN_SECONDS)
            if raw_immunity:
                try:
                    immunity = int(raw_immunity) * 1000
                except ValueError:
                    pass
            if now - half.header.born_timestamp < immunity:
                break
            try:
                request = self._renew_and_build_check(half)
            except _PoisonHalf as exc:
                # It can never be re-appended: checking it again would block every later half message.
                log.warning(
                    "half message %s at queue offset %d skipped: %s", half.uniq_key, queue_offset, exc
                )
                self.stats["skipped"] += 1
                next_half = queue_offset + 1
                continue
            if request is None:
                break  # the store refused the copy: try again next pass
            group = half.producer_group
            if group:
                out.requests.append((group, request))
            next_half = queue_offset + 1
        # Ops that close half messages behind the new half progress are no longer needed.
        next_op = op_start
        for op_offset, closed in ops:
            if closed >= next_half:
                break
            next_op = op_offset + 1
        if next_half != half_start:
            self.offsets.commit_offset(CHECK_GROUP, HALF_TOPIC, HALF_QUEUE_ID, next_half)
        if next_op != op_start:
            self.offsets.commit_offset(CHECK_GROUP, OP_HALF_TOPIC, HALF_QUEUE_ID, next_op)
        out.half_offset, out.op_offset = next_half, next_op
        self.stats["checked"] += len(out.requests)
        return out

    def _renew_and_build_check(self, half: HalfMessage) -> RemotingCommand | None:
        try:
            renewed = half.renewed()
        except (ValueError, KeyError) as exc:
            raise _PoisonHalf(f"cannot be renewed: {exc!r}") from None
        result = self._put(renewed)
        if result.status in _POISON_STATUSES:
            raise _PoisonHalf(f"the store refused its copy: {result.status.name}")
        if result.status not in _STORED:
            log.warning("re-appending half message %s failed: %s", half.uniq_key, result.status)
            return None
        raw = self.store.select_one_message_by_offset(result.wrote_offset)
        if raw is None:
            return None
        copy = HalfMessage.parse(bytes(raw))
        del raw
        return RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, copy.check_header(), copy.check_body(), oneway=True
        )

    def _discard(self, half: HalfMessage) -> None:
        self.topics.create_in_send_back(CHECK_MAX_TIME_TOPIC, 1, PERM_READ_WRITE)
        result = self._put(half.discarded())
        self.stats["discarded"] += 1
        log.info(
            "half message %s (group %s) checked %d times, moved to %s: %s",
            half.uniq_key,
            half.producer_group,
            half.check_times,
            CHECK_MAX_TIME_TOPIC,
            result.status.name,
        )
