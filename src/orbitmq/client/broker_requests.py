"""Requests brokers send to a client: NOTIFY_CONSUMER_IDS_CHANGED (rebalance now),
RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY (relayed from admin
tools to the group's consumer), CHECK_TRANSACTION_STATE (to the group's transaction producer)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from orbitmq.client.config import ClientConfig
from orbitmq.client.roles import ConsumerInner, ProducerInner
from orbitmq.common.errors import OrbitError
from orbitmq.protocol.codes import CURRENT_VERSION, RequestCode, ResponseCode, version_desc
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.client import RemotingClient
from orbitmq.transport.connection import Connection

log = logging.getLogger("orbitmq.client")


class BrokerRequests:
    """The handlers of one ClientInstance, over its registered producers and consumers."""

    def __init__(
        self,
        client_id: str,
        config: ClientConfig,
        producers: dict[str, ProducerInner],
        consumers: dict[str, ConsumerInner],
        rebalance: Callable[[], None],
    ) -> None:
        self.client_id = client_id
        self.config = config
        self.producers = producers
        self.consumers = consumers
        self.rebalance = rebalance

    def register(self, remoting: RemotingClient) -> None:
        remoting.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_consumer_ids_changed)
        remoting.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check_transaction_state)
        remoting.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset_offset)
        remoting.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_running_info)
        remoting.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._on_consume_directly)

    async def _on_consumer_ids_changed(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand | None:
        log.debug("%s: consumer ids of %s changed", self.client_id, request.ext_fields.get("consumerGroup"))
        self.rebalance()
        return None

    async def _on_reset_offset(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        """An admin reset the group's offsets (the broker already stored them): consumers of the group
        drop what they cached for those queues and continue from the new offsets."""
        from orbitmq.protocol.bodies import ResetOffsetBody

        group = request.ext_fields.get("group", "")
        consumer = self.consumers.get(group)
        reset = getattr(consumer, "reset_offset", None)
        if reset is not None and request.body_length:
            await reset(ResetOffsetBody.from_json(request.body_bytes()).offset_table)
        if request.is_oneway:
            return None
        return RemotingCommand.response(ResponseCode.SUCCESS).response_to(request)

    def _not_here(self, request: RemotingCommand, group: str) -> RemotingCommand:
        remark = f"The Consumer Group <{group}> not exist in this consumer"
        return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, remark).response_to(request)

    async def _on_running_info(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """GET_CONSUMER_RUNNING_INFO, relayed by the broker from an admin tool (push consumers answer;
        RocketMQ adds the name servers, consume type and client version here)."""
        group = request.ext_fields.get("consumerGroup", "")
        consumer = self.consumers.get(group)
        build = getattr(consumer, "running_info", None)
        if consumer is None or build is None:
            return self._not_here(request, group)
        extra = {
            "PROP_NAMESERVER_ADDR": "".join(f"{a};" for a in self.config.namesrv_addrs),
            "PROP_CONSUME_TYPE": consumer.consume_type.value,
            "PROP_CLIENT_VERSION": version_desc(CURRENT_VERSION),
        }
        jstack = request.ext_fields.get("jstackEnable", "").lower() == "true"
        body = await build(extra, jstack=jstack)
        return RemotingCommand.response(ResponseCode.SUCCESS, None, None, body).response_to(request)

    async def _on_consume_directly(self, conn: Connection, request: RemotingCommand) -> RemotingCommand:
        """CONSUME_MESSAGE_DIRECTLY: run the group's listener on the attached message."""
        from orbitmq.message.codec import decode_records

        group = request.ext_fields.get("consumerGroup", "")
        consume = getattr(self.consumers.get(group), "consume_message_directly", None)
        if consume is None:
            return self._not_here(request, group)
        try:
            [msg] = decode_records(request.body_bytes())
        except (ValueError, OrbitError):
            remark = "CONSUME_MESSAGE_DIRECTLY needs exactly one message record in its body"
            return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, remark).response_to(request)
        body = await consume(msg, request.ext_fields.get("brokerName", ""))
        return RemotingCommand.response(ResponseCode.SUCCESS, None, None, body).response_to(request)

    async def _on_check_transaction_state(
        self, conn: Connection, request: RemotingCommand
    ) -> RemotingCommand | None:
        from orbitmq.message.codec import decode_records

        messages = decode_records(request.body_bytes()) if request.body_length else []
        if not messages:
            return None
        msg = messages[0]
        group = msg.properties.get("PGROUP")
        producer = self.producers.get(group or "")
        handler = getattr(producer, "check_transaction_state", None)
        if handler is None:
            log.warning(
                "%s: CHECK_TRANSACTION_STATE for group %s with no transaction producer", self.client_id, group
            )
            return None
        await handler(conn.remote_address, msg, dict(request.ext_fields))
        return (
            None if request.is_oneway else RemotingCommand.response(ResponseCode.SUCCESS).response_to(request)
        )
