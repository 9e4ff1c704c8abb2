"""The records of the half-message design (fact sheet 10), built from raw commit-log bytes. Pure functions.

Half messages, committed messages, op records and check copies (`HalfMessage`); bytes and values only,
nothing of the store, sockets or request codes.
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.message import properties as P
from orbitmq.message.ids import new_unique_id, offset_msg_id
from orbitmq.message.property_string import decode_properties, encode_properties
from orbitmq.message.record_layout import RecordHeader, encode_record, unpack_record_header
from orbitmq.message.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    reset_transaction_type,
)
from orbitmq.store.store_message import StoreMessage

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
# Progress of the check service is kept as this group's consumer offsets of the half and op queues.
CHECK_GROUP = "CID_RMQ_SYS_TRANS"
REMOVE_TAG = "d"
HALF_QUEUE_ID = 0


def to_half(topic: str, queue_id: int, sys_flag: int, props: dict[str, str]) -> tuple[str, int, int]:
    """Send path, TRAN_MSG=true: park the message in the half topic. Mutates `props` (REAL_TOPIC,
    REAL_QID); returns the (topic, queue id, sysFlag) to store it with."""
    props[P.REAL_TOPIC] = topic
    props[P.REAL_QID] = str(queue_id)
    return HALF_TOPIC, HALF_QUEUE_ID, reset_transaction_type(sys_flag, TRANSACTION_NOT_TYPE)


@dataclass(slots=True)
class HalfMessage:
    """A half record read back from the commit log: its fixed fields, raw properties string and body.

    - A half message is the producer's message parked in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0 with its real
      topic and queue in REAL_TOPIC / REAL_QID and the transaction bits of its sysFlag reset to NOT, so the
      store treats it as an ordinary record (it gets a consume-queue entry, no consumer ever sees it).
    - Committing stores the final message: real topic and queue back, sysFlag transaction bits = COMMIT,
      preparedTransactionOffset = the half record's physical offset, the half's properties verbatim.
    - An op record in `RMQ_SYS_TRANS_OP_HALF_TOPIC` (tag `d`, body = the half's queue offset as decimal
      text) marks a half message as done (committed or rolled back).
    - The check service re-appends a half message it is about to check with TRANSACTION_CHECK_TIMES + 1,
      and sends the producer the half message re-encoded with its real topic and queue.
    """

    header: RecordHeader
    topic: str
    properties_text: str
    properties: dict[str, str]
    body: bytes

    @classmethod
    def parse(cls, raw: bytes | bytearray | memoryview) -> HalfMessage:
        """Raises RemoteProtocolError when `raw` is not one well-formed record."""
        h = unpack_record_header(raw)
        view = memoryview(raw)
        topic = bytes(view[h.topic_pos : h.topic_pos + h.topic_len]).decode("utf-8", "replace")
        text = bytes(view[h.properties_pos : h.properties_pos + h.properties_len]).decode("utf-8", "replace")
        body = bytes(view[h.body_pos : h.body_pos + h.body_len])
        return cls(h, topic, text, decode_properties(text), body)

    @property
    def physical_offset(self) -> int:
        return int(self.header.physical_offset)

    @property
    def queue_offset(self) -> int:
        return int(self.header.queue_offset)

    @property
    def store_timestamp(self) -> int:
        return int(self.header.store_timestamp)

    @property
    def producer_group(self) -> str | None:
        return self.properties.get(P.PGROUP)

    @property
    def real_topic(self) -> str:
        return self.properties.get(P.REAL_TOPIC, "")

    @property
    def real_queue_id(self) -> int:
        try:
            return int(self.properties.get(P.REAL_QID, "0"))
        except ValueError:
            return 0

    @property
    def check_times(self) -> int:
        try:
            return int(self.properties.get(P.TRANSACTION_CHECK_TIMES, "0"))
        except ValueError:
            return 0

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(P.UNIQ_KEY)

    def _store_message(self, topic: str, queue_id: int, sys_flag: int, properties: str) -> StoreMessage:
        h = self.header
        return StoreMessage(
            topic=topic,
            queue_id=queue_id,
            flag=h.flag,
            body=self.body,
            properties=properties,
            sys_flag=sys_flag,
            born_timestamp=h.born_timestamp,
            born_host=bytes(h.born_host),
            reconsume_times=h.reconsume_times,
        )

    def committed(self) -> StoreMessage:
        """The final message END_TRANSACTION(COMMIT) stores (fact sheet 10.3)."""
        msg = self._store_message(
            self.real_topic,
            self.real_queue_id,
            reset_transaction_type(self.header.sys_flag, TRANSACTION_COMMIT_TYPE),
            self.properties_text,
        )
        msg.prepared_transaction_offset = self.physical_offset
        return msg

    def renewed(self) -> StoreMessage:
        """The copy the check service appends before asking the producer (check count + 1)."""
        props = dict(self.properties)
        props[P.TRANSACTION_CHECK_TIMES] = str(self.check_times + 1)
        return self._store_message(
            HALF_TOPIC, self.header.queue_id, self.header.sys_flag, encode_properties(props)
        )

    def discarded(self) -> StoreMessage:
        """A half message checked too often, parked in TRANS_CHECK_MAX_TIME_TOPIC for an operator."""
        return self._store_message(CHECK_MAX_TIME_TOPIC, 0, self.header.sys_flag, self.properties_text)

    def check_body(self) -> bytes:
        """CHECK_TRANSACTION_STATE body: the half record re-encoded with its real topic and queue."""
        h = self.header
        return encode_record(
            queue_id=self.real_queue_id,
            flag=h.flag,
            queue_offset=h.queue_offset,
            physical_offset=h.physical_offset,
            sys_flag=h.sys_flag,
            born_timestamp=h.born_timestamp,
            born_host=bytes(h.born_host),
            store_timestamp=h.store_timestamp,
            store_host=bytes(h.store_host),
            reconsume_times=h.reconsume_times,
            prepared_transaction_offset=h.prepared_transaction_offset,
            body=self.body,
            topic=self.real_topic.encode(),
            properties=self.properties_text.encode(),
            body_crc=h.body_crc,
        )

    def check_header(self) -> dict[str, str]:
        """CHECK_TRANSACTION_STATE ext fields for this (re-appended) half record."""
        uniq = self.uniq_key or ""
        return {
            "tranStateTableOffset": str(self.queue_offset),
            "commitLogOffset": str(self.physical_offset),
            "msgId": uniq,
            "transactionId": uniq,
            "offsetMsgId": offset_msg_id(bytes(self.header.store_host), self.physical_offset),
        }


def op_message(half_queue_offset: int, *, store_host: bytes, now_ms: int) -> StoreMessage:
    """The op record saying "the half message at this queue offset is done" (fact sheet 10.3)."""
    props = {P.TAGS: REMOVE_TAG, P.UNIQ_KEY: new_unique_id(), P.WAIT: "false"}
    return StoreMessage(
        topic=OP_HALF_TOPIC,
        queue_id=HALF_QUEUE_ID,
        flag=0,
        body=str(half_queue_offset).encode(),
        properties=encode_properties(props),
        sys_flag=0,
        born_timestamp=now_ms,
        born_host=store_host,
    )


def op_half_offset(raw: bytes | bytearray | memoryview) -> int | None:
    """The half queue offset an op record refers to (None for a record that is not a remove op)."""
    h = unpack_record_header(raw)
    view = memoryview(raw)
    props = decode_properties(
        bytes(view[h.properties_pos : h.properties_pos + h.properties_len]).decode("utf-8", "replace")
    )
    if props.get(P.TAGS) != REMOVE_TAG:
        return None
    try:
        return int(bytes(view[h.body_pos : h.body_pos + h.body_len]).decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
