"""ReceiveMessage, AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue: the checks and
answers of RocketMQ 5's proxy, over pop.py's in-flight table.

A receive answers, as a stream, either a Status OK, the delivery timestamp and the messages (each with
its receipt handle, invisible duration and delivery attempt), or one Status (MESSAGE_NOT_FOUND: none).
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.protocol.sql92 import SqlParseError, compile_selector
from orbitmq.proxy.convert import to_pb
from orbitmq.proxy.local_channel import LocalChannel
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.pop import PopService
from orbitmq.proxy.route import check_group, check_topic
from orbitmq.proxy.settings import ClientSettingsTable
from orbitmq.proxy.status import Code, ProxyError, ok, status


@dataclass(frozen=True, slots=True)
class ReceiveLimits:
    """RocketMQ 5 ProxyConfig's bounds on a receive."""

    min_invisible_s: float = 10.0
    max_invisible_s: float = 12 * 3600.0
    default_invisible_s: float = 60.0  # for auto_renew receives
    min_polling_s: float = 5.0
    max_polling_s: float = 20.0
    max_batch: int = 1024
    reserve_s: float = 0.1  # of the caller's deadline, kept for the answer


def _check_invisible(seconds: float, least: float, limits: ReceiveLimits) -> float:
    if seconds < least:
        raise ProxyError(Code.ILLEGAL_INVISIBLE_TIME, f"the invisible time is too small, min is {least:g} s")
    if seconds > limits.max_invisible_s:
        raise ProxyError(
            Code.ILLEGAL_INVISIBLE_TIME,
            f"the invisible time is too large, max is {limits.max_invisible_s:g} s",
        )
    return seconds


class Consumption:
    def __init__(
        self, settings: ClientSettingsTable, pop: PopService, limits: ReceiveLimits | None = None
    ) -> None:
        self.settings = settings
        self.pop = pop
        self.limits = limits or ReceiveLimits()

    def polling_seconds(self, request: spb.ReceiveMessageRequest, time_remaining: float | None) -> float:
        limits = self.limits
        asked = (
            request.long_polling_timeout.ToMilliseconds() / 1000
            if request.HasField("long_polling_timeout")
            else 0
        )
        polling = min(max(asked, limits.min_polling_s), limits.max_polling_s)
        if time_remaining is not None:
            budget = time_remaining - limits.reserve_s
            if polling > budget:
                if budget < limits.min_polling_s:
                    raise ProxyError(
                        Code.ILLEGAL_POLLING_TIME, "the deadline time remaining is not enough for polling"
                    )
                polling = budget
        return polling

    async def receive(
        self,
        channel: LocalChannel,
        request: spb.ReceiveMessageRequest,
        time_remaining: float | None,
    ) -> list[spb.ReceiveMessageResponse]:
        polling = self.polling_seconds(request, time_remaining)
        topic = check_topic(request.message_queue.topic)
        group = check_group(request.group)
        limits = self.limits
        if request.auto_renew:
            invisible = limits.default_invisible_s
        else:
            invisible = _check_invisible(
                request.invisible_duration.ToMilliseconds() / 1000, limits.min_invisible_s, limits
            )
        expression = request.filter_expression
        selector = None
        if expression.type == pb.SQL:  # filtered here (the broker filters SQL92 only with a property filter)
            try:
                selector = compile_selector(expression.expression)
            except SqlParseError as exc:
                raise ProxyError(Code.ILLEGAL_FILTER_EXPRESSION, str(exc)) from None
        batch = request.batch_size
        if not 1 <= batch <= limits.max_batch:
            raise ProxyError(Code.BAD_REQUEST, f"batch size must be between 1 and {limits.max_batch}")
        deliveries = await self.pop.receive(
            channel,
            group=group,
            topic=topic,
            batch=batch,
            invisible_s=invisible,
            poll_s=polling,
            tags="*" if selector is not None else (expression.expression.strip() or "*"),
            selector=selector,
            # (from the group, not the client's settings: a receive may come before its Telemetry did)
            max_attempts=self.settings.max_attempts(group),
        )
        if not deliveries:
            return [spb.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no new message"))]
        answers = [spb.ReceiveMessageResponse(status=ok())]
        # When delivery started: the clients measure their receive latency from it (the Python
        # PushConsumer needs it).
        started = spb.ReceiveMessageResponse()
        started.delivery_timestamp.GetCurrentTime()
        answers.append(started)
        for delivery in deliveries:
            message = to_pb(delivery.message)
            system = message.system_properties
            system.receipt_handle = delivery.receipt_handle
            system.invisible_duration.FromMilliseconds(int(invisible * 1000))
            system.delivery_attempt = delivery.attempt
            answers.append(spb.ReceiveMessageResponse(message=message))
        return answers

    async def ack(self, channel: LocalChannel, request: spb.AckMessageRequest) -> spb.AckMessageResponse:
        group = check_group(request.group)
        topic = check_topic(request.topic)
        response = spb.AckMessageResponse()
        for entry in request.entries:
            result = response.entries.add(message_id=entry.message_id, receipt_handle=entry.receipt_handle)
            try:
                await self.pop.ack(channel, group=group, topic=topic, handle=entry.receipt_handle)
                result.status.CopyFrom(ok())
            except ProxyError as exc:
                result.status.CopyFrom(exc.status())
        codes = {entry.status.code for entry in response.entries}
        if not codes:
            response.status.CopyFrom(status(Code.BAD_REQUEST, "no entry to ack"))
        elif len(codes) == 1:
            response.status.CopyFrom(response.entries[0].status)
        else:
            response.status.CopyFrom(status(Code.MULTIPLE_RESULTS))
        return response

    def change_invisible(
        self, request: spb.ChangeInvisibleDurationRequest
    ) -> spb.ChangeInvisibleDurationResponse:
        group = check_group(request.group)
        topic = check_topic(request.topic)
        seconds = _check_invisible(request.invisible_duration.ToMilliseconds() / 1000, 0.0, self.limits)
        handle = self.pop.change_invisible(
            group=group, topic=topic, handle=request.receipt_handle, invisible_s=seconds
        )
        return spb.ChangeInvisibleDurationResponse(status=ok(), receipt_handle=handle)

    async def forward_to_dead_letter_queue(
        self, channel: LocalChannel, request: spb.ForwardMessageToDeadLetterQueueRequest
    ) -> spb.ForwardMessageToDeadLetterQueueResponse:
        group = check_group(request.group)
        topic = check_topic(request.topic)
        await self.pop.dead_letter(
            channel,
            group=group,
            topic=topic,
            handle=request.receipt_handle,
            attempts=request.max_delivery_attempts,
        )
        return spb.ForwardMessageToDeadLetterQueueResponse(status=ok())
