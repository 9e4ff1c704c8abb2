"""`orbitmq admin` subcommands for messages (mqadmin's names and flags): queryMsgById, queryMsgByKey,
queryMsgByOffset, sendMessage, consumeMessage.

Each runner turns AdminClient results into a Report; it knows nothing about sockets.
"""

from __future__ import annotations

import argparse
import time

from orbitmq.admin.api import LONG_MAX, AdminClient, AdminError
from orbitmq.admin.registry import Report, command, non_negative_int, positive_int
from orbitmq.admin.table import format_pairs, format_table, format_timestamp, parse_time
from orbitmq.admin.views import message_to_json
from orbitmq.client.results import PullStatus
from orbitmq.common.errors import ClientError
from orbitmq.message.model import MessageExt, MessageQueue

BODY_PREVIEW = 64


def message_details(msg: MessageExt) -> str:
    """One message as mqadmin's queryMsgById prints it: aligned `Name: value` lines."""
    body = bytes(msg.body).decode("utf-8", errors="replace")
    return format_pairs(
        [
            ("OffsetID", msg.offset_msg_id),
            ("Topic", msg.topic),
            ("Tags", f"[{msg.tags or ''}]"),
            ("Keys", f"[{msg.keys or ''}]"),
            ("Queue ID", msg.queue_id),
            ("Queue Offset", msg.queue_offset),
            ("CommitLog Offset", msg.commit_log_offset),
            ("Reconsume Times", msg.reconsume_times),
            ("Born Timestamp", format_timestamp(msg.born_timestamp)),
            ("Store Timestamp", format_timestamp(msg.store_timestamp)),
            ("Born Host", msg.born_host),
            ("Store Host", msg.store_host),
            ("System Flag", msg.sys_flag),
            ("Properties", str(dict(sorted(msg.properties.items())))),
            ("Message Body Length", len(msg.body)),
            ("Message Body", body),
        ]
    )


def _time_arg(text: str | None, default: int) -> int:
    if text is None:
        return default
    try:
        return parse_time(text, now_ms=int(time.time() * 1000))
    except ValueError as exc:
        raise ClientError(str(exc)) from None


def _by_id_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--msgId", dest="msg_id", required=True, help="message id(s), ','-separated")
    p.add_argument("-t", "--topic", help="topic: needed to look a client id (UNIQ_KEY) up in the key index")


@command("queryMsgById", "find a message by its offset message id (or by UNIQ_KEY with -t)", _by_id_args)
async def query_msg_by_id(admin: AdminClient, args: argparse.Namespace) -> Report:
    blocks, data = [], []
    for msg_id in [m.strip() for m in args.msg_id.split(",") if m.strip()]:
        for msg in await admin.query_message_by_id(msg_id, args.topic):
            blocks.append(message_details(msg))
            data.append(message_to_json(msg))
    if not data:
        raise ClientError("no message id given (-i)")
    return Report("\n\n".join(blocks), data)


def _by_key_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, help="topic of the messages")
    p.add_argument("-k", "--msgKey", dest="key", required=True, help="the key (one of the message's KEYS)")
    p.add_argument("-b", "--beginTimestamp", dest="begin", help="from this store time (ms or date)")
    p.add_argument("-e", "--endTimestamp", dest="end", help="up to this store time (ms or date)")
    p.add_argument("-c", "--maxNum", dest="max_num", type=positive_int, default=64, help="at most (64)")


@command("queryMsgByKey", "find messages by key through the brokers' key index", _by_key_args)
async def query_msg_by_key(admin: AdminClient, args: argparse.Namespace) -> Report:
    messages = await admin.query_message_by_key(
        args.topic,
        args.key,
        max_num=args.max_num,
        begin_ms=_time_arg(args.begin, 0),
        end_ms=_time_arg(args.end, LONG_MAX),
    )
    text = format_table(
        ["#Message ID", "#QID", "#Offset", "#Store Time", "#Offset Message ID"],
        [
            (m.msg_id, m.queue_id, m.queue_offset, format_timestamp(m.store_timestamp), m.offset_msg_id)
            for m in messages
        ],
    )
    return Report(text, [message_to_json(m) for m in messages])


def _by_offset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, help="topic of the queue")
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True, help="broker holding the queue")
    p.add_argument("-i", "--queueId", dest="queue_id", type=non_negative_int, required=True, help="queue id")
    p.add_argument("-o", "--offset", type=non_negative_int, required=True, help="queue offset")


@command("queryMsgByOffset", "read the message at one queue offset", _by_offset_args)
async def query_msg_by_offset(admin: AdminClient, args: argparse.Namespace) -> Report:
    msg = await admin.query_message_by_offset(args.topic, args.broker_name, args.queue_id, args.offset)
    return Report(message_details(msg), message_to_json(msg, args.broker_name))


def _send_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, help="topic to send to")
    p.add_argument("-p", "--body", required=True, help="message body (UTF-8 text)")
    p.add_argument("-k", "--key", dest="keys", help="keys, space-separated")
    p.add_argument("-c", "--tags", help="tag")
    p.add_argument("-b", "--broker", dest="broker_name", help="broker name (with -i: send to that queue)")
    p.add_argument("-i", "--qid", dest="queue_id", type=non_negative_int, help="queue id (with -b)")


@command("sendMessage", "send one message", _send_args)
async def send_message(admin: AdminClient, args: argparse.Namespace) -> Report:
    if (args.broker_name is None) != (args.queue_id is None):
        raise ClientError("give both -b brokerName and -i queueId, or neither")
    result = await admin.send_message(
        args.topic,
        args.body.encode(),
        keys=args.keys,
        tags=args.tags,
        broker_name=args.broker_name,
        queue_id=args.queue_id,
    )
    mq = result.message_queue
    text = format_table(
        ["#Broker Name", "#QID", "#Send Result", "#MsgId", "#Offset Message ID", "#Queue Offset"],
        [
            (
                mq.broker_name,
                mq.queue_id,
                result.status.value,
                result.msg_id,
                result.offset_msg_id,
                result.queue_offset,
            )
        ],
    )
    data = {
        "brokerName": mq.broker_name,
        "queueId": mq.queue_id,
        "sendStatus": result.status.value,
        "msgId": result.msg_id,
        "offsetMsgId": result.offset_msg_id,
        "queueOffset": result.queue_offset,
    }
    return Report(text, data)


def _consume_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, help="topic to read")
    p.add_argument("-b", "--brokerName", dest="broker_name", help="only this broker's queues")
    p.add_argument(
        "-i", "--queueId", dest="queue_id", type=non_negative_int, help="only this queue (with -b)"
    )
    p.add_argument("-o", "--offset", type=non_negative_int, help="start at this queue offset (default: min)")
    p.add_argument("-g", "--consumerGroup", dest="group", default="TOOLS_CONSUMER", help="group used to pull")
    p.add_argument("-s", "--beginTimestamp", dest="begin", help="start at this store time (ms or date)")
    p.add_argument("-e", "--endTimestamp", dest="end", help="stop at this store time (ms or date)")
    p.add_argument(
        "-c", "--MessageNumber", dest="count", type=positive_int, default=128, help="at most (128)"
    )


@command("consumeMessage", "pull and print messages of a topic (offsets are not committed)", _consume_args)
async def consume_message(admin: AdminClient, args: argparse.Namespace) -> Report:
    queues = await admin.read_queues(args.topic)
    if args.broker_name is not None:
        queues = [q for q in queues if q.broker_name == args.broker_name]
    if args.queue_id is not None:
        queues = [q for q in queues if q.queue_id == args.queue_id]
    if not queues:
        raise AdminError(f"topic {args.topic!r} has no such queue")
    begin = _time_arg(args.begin, -1)
    end = _time_arg(args.end, LONG_MAX)
    messages: list[tuple[str, MessageExt]] = []
    for mq in queues:
        if len(messages) >= args.count:
            break
        found = await _consume_queue(admin, args, mq, begin=begin, end=end, limit=args.count - len(messages))
        messages += [(mq.broker_name, m) for m in found]
    text = format_table(
        ["#Broker Name", "#QID", "#Offset", "#MsgId", "#Tags", "#Keys", "#Store Time", "#Body"],
        [
            (
                broker_name,
                m.queue_id,
                m.queue_offset,
                m.msg_id,
                m.tags,
                m.keys,
                format_timestamp(m.store_timestamp),
                _preview(m.body),
            )
            for broker_name, m in messages
        ],
    )
    data = [message_to_json(m, broker_name) for broker_name, m in messages]
    return Report(text + f"\n\nConsumed {len(messages)} messages", data)


def _preview(body: bytes) -> str:
    text = bytes(body[: BODY_PREVIEW * 4]).decode("utf-8", errors="replace")
    return text if len(text) <= BODY_PREVIEW else text[: BODY_PREVIEW - 3] + "..."


async def _consume_queue(
    admin: AdminClient, args: argparse.Namespace, mq: MessageQueue, *, begin: int, end: int, limit: int
) -> list[MessageExt]:
    min_offset, max_offset = await admin.queue_offsets(mq)
    if args.offset is not None:
        offset = args.offset
    elif begin >= 0:
        offset = await admin.search_offset(mq, begin)
    else:
        offset = min_offset
    out: list[MessageExt] = []
    while offset < max_offset and len(out) < limit:
        result = await admin.pull(mq, offset, min(32, limit - len(out)), group=args.group)
        if result.status is PullStatus.OFFSET_ILLEGAL:
            offset = result.next_begin_offset
            if offset >= max_offset:
                break
            continue
        if result.status is not PullStatus.FOUND:
            break
        for msg in result.messages:
            if msg.store_timestamp > end or len(out) >= limit:
                return out
            if begin < 0 or msg.store_timestamp >= begin:
                out.append(msg)
        if result.next_begin_offset <= offset:
            break
        offset = result.next_begin_offset
    return out
