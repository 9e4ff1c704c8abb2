"""The asyncio TransactionProducer: half message, local transaction, END_TRANSACTION (fact sheet 10.1).

`send_message_in_transaction(msg, arg)`:
1. marks the message TRAN_MSG=true / PGROUP=<group> (DELAY cleared) and sends it like any message; the
   producer adds sysFlag TRANSACTION_PREPARED so the broker parks it as a half message;
2. if it was stored (SEND_OK) runs `listener.execute_local_transaction(msg, arg)`; a send that was
   stored without SEND_OK (flush / slave timeout) is rolled back without running it;
3. tells the broker that stored the half message (its master) COMMIT / ROLLBACK / UNKNOW with a oneway
   END_TRANSACTION.
When the broker asks about a transaction left unknown (CHECK_TRANSACTION_STATE, routed here by
ClientInstance), `listener.check_local_transaction(msg)` answers and the answer goes back the same way.

Listener methods may be coroutine functions (awaited on the loop) or plain functions (run in a worker
thread, so blocking code does not stall the client). An exception or None means UNKNOW.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Sequence
from typing import Any, Final, Protocol, Unpack

from orbitmq.client.options import ProducerKeywords, ProducerOptions
from orbitmq.client.producer import Producer
from orbitmq.client.results import LocalTransactionState, SendResult, SendStatus, TransactionSendResult
from orbitmq.client.routing import TopicPublishInfo
from orbitmq.common.errors import ClientError
from orbitmq.message import properties as P
from orbitmq.message.ids import decode_offset_msg_id
from orbitmq.message.model import Message, MessageExt

# LocalTransactionState and TransactionSendResult live in results.py (a compiled module cannot define a
# slotted dataclass subclass) and are still importable from here.
__all__ = ["LocalTransactionState", "TransactionListener", "TransactionProducer", "TransactionSendResult"]

log: Final = logging.getLogger("orbitmq.client")


class TransactionListener(Protocol):
    """Both methods may also be `async def`; returning None counts as UNKNOW."""

    def execute_local_transaction(self, msg: Message, arg: Any) -> Any: ...

    def check_local_transaction(self, msg: MessageExt) -> Any: ...


class TransactionProducer(Producer):
    """`async with TransactionProducer(group, namesrv, listener=...) as p:
    await p.send_message_in_transaction(msg, arg)`."""

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv_addrs: str | Sequence[str] | None = None,
        *,
        listener: TransactionListener,
        options: ProducerOptions | None = None,
        **keywords: Unpack[ProducerKeywords],
    ) -> None:
        if listener is None:
            raise ClientError("TransactionListener is null")
        super().__init__(group, namesrv_addrs, options=options, **keywords)
        self.path.transactional = True  # half messages are sent TRANSACTION_PREPARED
        self.listener = listener

    async def start(self) -> None:
        """Start, then heartbeat at once to every broker of the template topic's route (TBW102, as
        RocketMQ's producers track it), so that a producer restarted while its transactions were unknown
        receives the brokers' checks before it sends anything itself."""
        if self.started:
            return
        await super().start()
        path = self.path
        instance = path.require_instance()
        path.publish_info.setdefault(path.create_topic_key, TopicPublishInfo(path.create_topic_key, []))
        try:
            await instance.update_topic_route(path.create_topic_key)
            await instance.send_heartbeat_to_all()
        except Exception as exc:  # the periodic route refresh and heartbeat will try again
            log.debug("transaction producer %s: early heartbeat failed: %s", self.group, exc)

    async def send_message_in_transaction(
        self, msg: Message, arg: Any = None, *, timeout: float | None = None
    ) -> TransactionSendResult:
        msg.properties.pop(P.DELAY, None)
        msg.properties[P.TRAN_MSG] = "true"
        msg.properties[P.PGROUP] = self.group
        result = await self.send(msg, timeout=timeout)
        remark: str | None = None
        if result.status is SendStatus.SEND_OK:
            if result.transaction_id:
                msg.properties[P.TRANSACTION_ID] = result.transaction_id
            try:
                state = await self._call(self.listener.execute_local_transaction, msg, arg)
            except Exception as exc:
                log.warning("local transaction of %s raised: %r", result.msg_id, exc)
                state = LocalTransactionState.UNKNOW
                remark = f"executeLocalTransactionBranch exception: {exc!r}"
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            await self._end_transaction(result, state, remark)
        except Exception as exc:
            # The broker's check will ask again; the half message is safe.
            log.warning("END_TRANSACTION for %s failed: %s", result.msg_id, exc)
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(SendResult)}
        return TransactionSendResult(**fields, local_transaction_state=state)

    @staticmethod
    async def _call(fn: Any, *args: Any) -> LocalTransactionState:
        if inspect.iscoroutinefunction(fn):
            value = await fn(*args)
        else:
            value = await asyncio.to_thread(fn, *args)
            if inspect.isawaitable(value):
                value = await value
        if value is None:
            return LocalTransactionState.UNKNOW
        if not isinstance(value, LocalTransactionState):
            raise ClientError(f"a transaction listener returned {value!r}, not a LocalTransactionState")
        return value

    async def _end_transaction(
        self, result: SendResult, state: LocalTransactionState, remark: str | None
    ) -> None:
        broker_name = result.message_queue.broker_name
        addr = await self.path.require_instance().find_master_address(broker_name, result.message_queue.topic)
        if addr is None:
            raise ClientError(f"The broker[{broker_name}] not exist")
        _, _, physical_offset = decode_offset_msg_id(result.offset_msg_id)
        header = {
            "producerGroup": self.group,
            "tranStateTableOffset": str(result.queue_offset),
            "commitLogOffset": str(physical_offset),
            "commitOrRollback": str(state.wire_value),
            "fromTransactionCheck": "false",
            "msgId": result.msg_id,
            "bname": broker_name,
        }
        if result.transaction_id:
            header["transactionId"] = result.transaction_id
        await self.path.require_instance().api.end_transaction_oneway(addr, header, remark)

    # ---- broker check-back (ClientInstance calls this on CHECK_TRANSACTION_STATE) -------------

    async def check_transaction_state(
        self, broker_addr: str, msg: MessageExt, header: dict[str, str]
    ) -> None:
        """Answer in the background so the connection's reader is never held by user code."""
        self.path.track(asyncio.get_running_loop().create_task(self._answer_check(broker_addr, msg, header)))

    async def _answer_check(self, broker_addr: str, msg: MessageExt, header: dict[str, str]) -> None:
        uniq = msg.properties.get(P.UNIQ_KEY)
        remark: str | None = None
        try:
            state = await self._call(self.listener.check_local_transaction, msg)
        except Exception as exc:
            log.warning("transaction check of %s raised: %r", uniq, exc)
            state = LocalTransactionState.UNKNOW
            remark = f"checkLocalTransactionState exception: {exc!r}"
        end = {
            "producerGroup": self.group,
            "tranStateTableOffset": header.get("tranStateTableOffset", "0"),
            "commitLogOffset": header.get("commitLogOffset", "0"),
            "commitOrRollback": str(state.wire_value),
            "fromTransactionCheck": "true",
            "msgId": uniq or msg.msg_id,
        }
        if header.get("transactionId"):
            end["transactionId"] = header["transactionId"]
        if header.get("bname"):
            end["bname"] = header["bname"]
        try:
            await self.path.require_instance().api.end_transaction_oneway(broker_addr, end, remark)
        except Exception as exc:
            log.warning("END_TRANSACTION (check answer) to %s failed: %s", broker_addr, exc)
