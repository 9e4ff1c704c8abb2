"""apache.rocketmq.v2.MessagingService: each RPC's handler, and the grpc handler table that serves them.

Failures are answered in the response's Status (RocketMQ's Code) with the gRPC status OK, as RocketMQ 5's
proxy answers; only a Telemetry stream is ended with a gRPC error (INVALID_ARGUMENT, or UNAUTHENTICATED
for an ACL refusal). RPCs this endpoint does not serve yet answer NOT_IMPLEMENTED.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, TypeAlias, TypeVar

import grpc
from google.protobuf.message import Message

from orbitmq.acl.errors import AclError
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.proxy.auth import authenticate, refusal
from orbitmq.proxy.backend import LocalBroker
from orbitmq.proxy.call_context import CallContext
from orbitmq.proxy.consume import Consumption
from orbitmq.proxy.local_channel import LocalChannels
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.pop import PopService
from orbitmq.proxy.registration import register, unregister
from orbitmq.proxy.route import Router, check_group, check_topic
from orbitmq.proxy.send import Sender
from orbitmq.proxy.settings import ClientSettingsTable
from orbitmq.proxy.status import Code, ProxyError, ok, status
from orbitmq.proxy.transaction import end_transaction, recover_command

log: Final = logging.getLogger("orbitmq.proxy")

SERVICE_NAME: Final = "apache.rocketmq.v2.MessagingService"
CONSUMER_TYPES: Final = (pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER)
TELEMETRY_QUEUE: Final = 1024  # commands waiting for one client's stream; more are dropped (logged)

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)
Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
# What a Telemetry stream sends: a command, a refusal that ends it, or None when the client's side ended.
Outgoing: TypeAlias = "spb.TelemetryCommand | ProxyError | None"


class MessagingService:
    """The RPCs of one gRPC endpoint serving `broker`, reachable on `port`."""

    def __init__(self, broker: LocalBroker, port: int) -> None:
        self.broker = broker
        self.router = Router(broker, port)
        self.settings = ClientSettingsTable(broker)
        self.channels = LocalChannels(broker.server, self._broker_request, acl=broker.acl)
        self.sender = Sender(broker)
        self.consumption = Consumption(self.settings, PopService(broker))
        # Each client's open Telemetry stream: what the server sends it goes through this queue.
        self._streams: dict[str, asyncio.Queue[Outgoing]] = {}

    def authenticate(self, ctx: CallContext) -> None:
        """With aclEnable: a verified signature, or an address the ACL lets in unsigned (auth.py)."""
        validator = self.broker.acl
        if validator is None:
            return
        credentials = authenticate(validator, ctx)
        self.channels.get(ctx.client_id, ctx.peer).credentials = credentials
        if credentials is None:
            try:
                validator.check(RemotingCommand.request(RequestCode.HEART_BEAT), "{}:{}".format(*ctx.peer))
            except AclError as exc:
                raise refusal(exc) from None

    # ---- unary RPCs ------------------------------------------------------------------------

    async def query_route(self, ctx: CallContext, request: spb.QueryRouteRequest) -> spb.QueryRouteResponse:
        return self.router.query_route(request)

    async def query_assignment(
        self, ctx: CallContext, request: spb.QueryAssignmentRequest
    ) -> spb.QueryAssignmentResponse:
        return self.router.query_assignment(request)

    async def heartbeat(self, ctx: CallContext, request: spb.HeartbeatRequest) -> spb.HeartbeatResponse:
        settings = self.settings.raw(ctx.client_id)
        if settings is None:
            raise ProxyError(Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")
        if settings.client_type in CONSUMER_TYPES:
            check_group(request.group)
        elif settings.client_type != pb.PRODUCER:
            raise ProxyError(Code.UNRECOGNIZED_CLIENT_TYPE, pb.ClientType.Name(settings.client_type))
        await register(self.channels.get(ctx.client_id, ctx.peer), ctx.client_id, settings)
        return spb.HeartbeatResponse(status=ok())

    async def notify_client_termination(
        self, ctx: CallContext, request: spb.NotifyClientTerminationRequest
    ) -> spb.NotifyClientTerminationResponse:
        settings = self.settings.remove(ctx.client_id)
        if settings is None:
            self.channels.remove(ctx.client_id)
            raise ProxyError(Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")
        try:
            if settings.client_type in CONSUMER_TYPES:
                check_group(request.group)
            await unregister(self.channels.get(ctx.client_id, ctx.peer), ctx.client_id, settings)
        finally:
            self.channels.remove(ctx.client_id)
        return spb.NotifyClientTerminationResponse(status=ok())

    async def send_message(
        self, ctx: CallContext, request: spb.SendMessageRequest
    ) -> spb.SendMessageResponse:
        return await self.sender.send(self.channels.get(ctx.client_id, ctx.peer), request)

    async def recall_message(
        self, ctx: CallContext, request: spb.RecallMessageRequest
    ) -> spb.RecallMessageResponse:
        return await self.sender.recall(self.channels.get(ctx.client_id, ctx.peer), request)

    async def end_transaction(
        self, ctx: CallContext, request: spb.EndTransactionRequest
    ) -> spb.EndTransactionResponse:
        return await end_transaction(self.channels.get(ctx.client_id, ctx.peer), request)

    async def ack_message(self, ctx: CallContext, request: spb.AckMessageRequest) -> spb.AckMessageResponse:
        return await self.consumption.ack(self.channels.get(ctx.client_id, ctx.peer), request)

    async def change_invisible_duration(
        self, ctx: CallContext, request: spb.ChangeInvisibleDurationRequest
    ) -> spb.ChangeInvisibleDurationResponse:
        return self.consumption.change_invisible(request)

    async def forward_to_dead_letter_queue(
        self, ctx: CallContext, request: spb.ForwardMessageToDeadLetterQueueRequest
    ) -> spb.ForwardMessageToDeadLetterQueueResponse:
        channel = self.channels.get(ctx.client_id, ctx.peer)
        return await self.consumption.forward_to_dead_letter_queue(channel, request)

    async def receive_message(
        self, request: spb.ReceiveMessageRequest, context: Context
    ) -> AsyncIterator[spb.ReceiveMessageResponse]:
        """A server stream: Status OK and the messages, or one Status."""
        try:
            ctx = CallContext.of(context)
            ctx.require_client_id()
            self.authenticate(ctx)
            channel = self.channels.get(ctx.client_id, ctx.peer)
            answers = await self.consumption.receive(channel, request, context.time_remaining())
        except ProxyError as exc:
            answers = [spb.ReceiveMessageResponse(status=exc.status())]
        except Exception as exc:
            log.exception("gRPC ReceiveMessage failed")
            failure = status(Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
            answers = [spb.ReceiveMessageResponse(status=failure)]
        for answer in answers:
            yield answer

    # ---- Telemetry -------------------------------------------------------------------------

    async def telemetry(
        self, requests: AsyncIterator[spb.TelemetryCommand], context: Context
    ) -> AsyncIterator[spb.TelemetryCommand]:
        """The client's settings in, the server's settings out; the stream stays open for the commands
        the server sends later (transaction check-backs)."""
        ctx = CallContext.of(context)
        try:
            ctx.require_client_id()
            self.authenticate(ctx)
        except ProxyError as exc:
            refused = exc.code in (Code.UNAUTHORIZED, Code.FORBIDDEN)
            code = grpc.StatusCode.UNAUTHENTICATED if refused else grpc.StatusCode.INVALID_ARGUMENT
            await context.abort(code, exc.message)
        outbox: asyncio.Queue[Outgoing] = asyncio.Queue(maxsize=TELEMETRY_QUEUE)
        self._streams[ctx.client_id] = outbox
        reader = asyncio.ensure_future(self._read_telemetry(ctx, requests, outbox))
        try:
            while (item := await outbox.get()) is not None:
                if isinstance(item, ProxyError):
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, item.message)
                yield item
        finally:
            reader.cancel()
            if self._streams.get(ctx.client_id) is outbox:
                del self._streams[ctx.client_id]

    async def _read_telemetry(
        self, ctx: CallContext, requests: AsyncIterator[spb.TelemetryCommand], outbox: asyncio.Queue[Outgoing]
    ) -> None:
        try:
            async for command in requests:
                kind = command.WhichOneof("command")
                if kind != "settings":
                    log.debug("telemetry from %s: %s not handled", ctx.client_id, kind)
                    continue
                try:
                    answer = self.accept_settings(ctx, command.settings)
                    await register(
                        self.channels.get(ctx.client_id, ctx.peer), ctx.client_id, command.settings
                    )
                except ProxyError as exc:
                    await outbox.put(exc)
                    return
                await outbox.put(answer)
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                outbox.put_nowait(None)

    def accept_settings(self, ctx: CallContext, settings: pb.Settings) -> spb.TelemetryCommand:
        kind = settings.WhichOneof("pub_sub")
        if kind == "publishing":
            for topic in settings.publishing.topics:
                check_topic(topic)
        elif kind == "subscription":
            check_group(settings.subscription.group)
        else:
            raise ProxyError(Code.BAD_REQUEST, "there is no publishing or subscription data in settings")
        self.settings.update(ctx.client_id, settings)
        answer = self.settings.answer(ctx.client_id)
        return spb.TelemetryCommand(status=ok(), settings=answer)

    def _broker_request(self, client_id: str, request: RemotingCommand) -> None:
        """The broker calling a client: a transaction check goes to its Telemetry stream."""
        if request.code != RequestCode.CHECK_TRANSACTION_STATE:
            log.debug("broker request code %d to %s not relayed", request.code, client_id)
            return
        outbox = self._streams.get(client_id)
        if outbox is None:
            log.info("transaction check for %s: it has no Telemetry stream", client_id)
            return
        try:
            outbox.put_nowait(recover_command(request))
        except asyncio.QueueFull:
            log.warning(
                "transaction check for %s dropped: %d commands wait already", client_id, outbox.qsize()
            )
        except Exception:
            log.exception("transaction check for %s could not be relayed", client_id)

    # ---- the handler table -----------------------------------------------------------------

    def generic_handler(self) -> grpc.GenericRpcHandler:
        """Every MessagingService method, served under apache.rocketmq.v2's service name."""
        unary: dict[
            str, tuple[Callable[[CallContext, Any], Awaitable[Message]], type[Message], type[Message]]
        ]
        unary = {
            "QueryRoute": (self.query_route, spb.QueryRouteRequest, spb.QueryRouteResponse),
            "QueryAssignment": (
                self.query_assignment,
                spb.QueryAssignmentRequest,
                spb.QueryAssignmentResponse,
            ),
            "Heartbeat": (self.heartbeat, spb.HeartbeatRequest, spb.HeartbeatResponse),
            "SendMessage": (self.send_message, spb.SendMessageRequest, spb.SendMessageResponse),
            "EndTransaction": (self.end_transaction, spb.EndTransactionRequest, spb.EndTransactionResponse),
            "RecallMessage": (self.recall_message, spb.RecallMessageRequest, spb.RecallMessageResponse),
            "AckMessage": (self.ack_message, spb.AckMessageRequest, spb.AckMessageResponse),
            "ChangeInvisibleDuration": (
                self.change_invisible_duration,
                spb.ChangeInvisibleDurationRequest,
                spb.ChangeInvisibleDurationResponse,
            ),
            "ForwardMessageToDeadLetterQueue": (
                self.forward_to_dead_letter_queue,
                spb.ForwardMessageToDeadLetterQueueRequest,
                spb.ForwardMessageToDeadLetterQueueResponse,
            ),
            "NotifyClientTermination": (
                self.notify_client_termination,
                spb.NotifyClientTerminationRequest,
                spb.NotifyClientTerminationResponse,
            ),
        }
        handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
        for name, (method, request_type, response_type) in unary.items():
            handlers[name] = grpc.unary_unary_rpc_method_handler(
                _answering(method, response_type, self.authenticate),
                request_deserializer=request_type.FromString,
                response_serializer=response_type.SerializeToString,
            )
        handlers["ReceiveMessage"] = grpc.unary_stream_rpc_method_handler(
            self.receive_message,
            request_deserializer=spb.ReceiveMessageRequest.FromString,
            response_serializer=spb.ReceiveMessageResponse.SerializeToString,
        )
        handlers["Telemetry"] = grpc.stream_stream_rpc_method_handler(
            self.telemetry,
            request_deserializer=spb.TelemetryCommand.FromString,
            response_serializer=spb.TelemetryCommand.SerializeToString,
        )
        for rpc in spb.DESCRIPTOR.services_by_name["MessagingService"].methods:
            if rpc.name in handlers:
                continue
            request_type = getattr(spb, rpc.input_type.name)
            response_type = getattr(spb, rpc.output_type.name)
            factory = (
                grpc.unary_stream_rpc_method_handler
                if rpc.server_streaming
                else grpc.unary_unary_rpc_method_handler
            )
            handlers[rpc.name] = factory(
                _not_implemented(rpc.name, response_type, streaming=rpc.server_streaming),
                request_deserializer=request_type.FromString,
                response_serializer=response_type.SerializeToString,
            )
        return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)

    def close(self) -> None:
        self.channels.close_all()


def _answering(
    method: Callable[[CallContext, Req], Awaitable[Resp]],
    response_type: type[Resp],
    authenticate: Callable[[CallContext], None],
) -> Callable[[Req, Context], Awaitable[Resp]]:
    """`method` with the caller's context, its refusals and failures answered in the response's Status."""

    async def call(request: Req, context: Context) -> Resp:
        try:
            ctx = CallContext.of(context)
            ctx.require_client_id()
            authenticate(ctx)
            return await method(ctx, request)
        except ProxyError as exc:
            return response_type(status=exc.status())
        except Exception as exc:
            log.exception("gRPC %s failed", type(request).__name__)
            return response_type(status=status(Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}"))

    return call


def _not_implemented(name: str, response_type: type[Message], *, streaming: bool) -> Callable[..., Any]:
    def answer() -> Message:
        return response_type(status=status(Code.NOT_IMPLEMENTED, f"{name} is not served by orbitmq yet"))

    if streaming:

        async def stream(request: Message, context: Context) -> AsyncIterator[Message]:
            yield answer()

        return stream

    async def unary(request: Message, context: Context) -> Message:
        return answer()

    return unary
