"""The console's JSON API: each handler is one or two AdminClient calls, answered as JSON.

Admin errors (unknown topic, no such message, a broker refusing) come back as HTTP 400 with
`{"error": text}`; the page shows the text. Nothing here keeps state besides the AdminClient.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from orbitmq.admin.api import AdminClient
from orbitmq.admin.views import message_to_json
from orbitmq.common.errors import OrbitError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ADMIN: web.AppKey[AdminClient] = web.AppKey("admin", AdminClient)
# Figures of GET_BROKER_RUNTIME_INFO the cluster page shows.
RUNTIME_KEYS = (
    "brokerVersionDesc",
    "brokerRole",
    "putTps",
    "sendTps",
    "consumeTps",
    "msgPutTotalTodayNow",
    "msgGetTotalTodayNow",
    "commitLogDiskRatio",
    "commitLogMaxOffset",
    "bootTimestamp",
)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def guarded(handler: Handler) -> Handler:
    async def run(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except (OrbitError, ValueError, KeyError) as exc:
            return _json({"error": str(exc) or type(exc).__name__}, status=400)

    return run


def _admin(request: web.Request) -> AdminClient:
    return request.app[ADMIN]


async def cluster(request: web.Request) -> web.Response:
    admin = _admin(request)
    rows = []
    for entry in await admin.brokers():
        row: dict[str, Any] = entry.to_json()
        try:
            info = await admin.broker_runtime_info(entry.address)
            row.update({k: info[k] for k in RUNTIME_KEYS if k in info})
        except OrbitError as exc:
            row["error"] = str(exc)
        rows.append(row)
    return _json({"namesrv": admin.namesrv_addrs, "brokers": rows})


async def topics(request: web.Request) -> web.Response:
    names = sorted(await _admin(request).topic_list())
    return _json({"topics": names})


async def topic_detail(request: web.Request) -> web.Response:
    admin = _admin(request)
    topic = request.match_info["topic"]
    route = await admin.topic_route(topic)
    queues = [q.to_json() for q in await admin.topic_status(topic)]
    routes = [
        {
            "brokerName": qd.broker_name,
            "readQueueNums": qd.read_queue_nums,
            "writeQueueNums": qd.write_queue_nums,
            "perm": qd.perm,
        }
        for qd in route.queue_datas
    ]
    return _json({"topic": topic, "routes": routes, "queues": queues})


async def create_topic(request: web.Request) -> web.Response:
    body = await request.json()
    topic = str(body["topic"]).strip()
    admin = _admin(request)
    cluster_name = str(body.get("cluster") or "") or None
    if cluster_name is None:
        brokers = await admin.master_brokers()
        if not brokers:
            raise ValueError("no broker is registered")
        cluster_name = brokers[0].cluster
    targets = await admin.update_topic(
        topic,
        cluster=cluster_name,
        read_queue_nums=int(body.get("readQueueNums", 4)),
        write_queue_nums=int(body.get("writeQueueNums", 4)),
        perm=int(body.get("perm", 6)),
    )
    return _json({"topic": topic, "brokers": targets})


async def groups(request: web.Request) -> web.Response:
    admin = _admin(request)
    names: set[str] = set()
    for entry in await admin.master_brokers():
        names.update(await admin.subscription_groups(entry.address))
    return _json({"groups": sorted(names)})


async def group_detail(request: web.Request) -> web.Response:
    admin = _admin(request)
    group = request.match_info["group"]
    topic = request.query.get("topic") or None
    try:
        progress = (await admin.consumer_progress(group, topic)).to_json()
    except OrbitError as exc:
        progress = {"group": group, "queues": [], "consumeTps": 0.0, "diffTotal": 0, "note": str(exc)}
    try:
        connection = await admin.consumer_connection(group)
        progress["members"] = [c.client_id for c in connection.connection_set]
    except OrbitError:
        progress["members"] = []
    progress["time"] = int(time.time() * 1000)
    return _json(progress)


async def reset_offset(request: web.Request) -> web.Response:
    body = await request.json()
    group = request.match_info["group"]
    entries = await _admin(request).reset_offset_by_time(group, str(body["topic"]), int(body["timestamp"]))
    return _json({"offsets": [e.to_json() for e in entries]})


async def messages(request: web.Request) -> web.Response:
    """By id (?id=, optional ?topic=), key (?topic=&key=) or position (?topic=&broker=&queue=&offset=)."""
    admin = _admin(request)
    q = request.query
    topic = q.get("topic") or None
    if q.get("id"):
        found = await admin.query_message_by_id(q["id"].strip(), topic)
    elif q.get("key"):
        if topic is None:
            raise ValueError("a key lookup needs a topic")
        found = await admin.query_message_by_key(topic, q["key"].strip())
    elif q.get("offset"):
        if topic is None:
            raise ValueError("an offset lookup needs a topic")
        broker = q.get("broker") or (await admin.read_queues(topic))[0].broker_name
        found = [
            await admin.query_message_by_offset(topic, broker, int(q.get("queue", "0")), int(q["offset"]))
        ]
    else:
        raise ValueError("give id, key or offset")
    return _json({"messages": [message_to_json(m) for m in found]})


async def send_message(request: web.Request) -> web.Response:
    body = await request.json()
    result = await _admin(request).send_message(
        str(body["topic"]),
        str(body.get("body", "")).encode(),
        keys=str(body.get("keys") or "") or None,
        tags=str(body.get("tags") or "") or None,
    )
    return _json(
        {
            "status": result.status.name,
            "msgId": result.msg_id,
            "offsetMsgId": result.offset_msg_id,
            "brokerName": result.message_queue.broker_name,
            "queueId": result.message_queue.queue_id,
            "queueOffset": result.queue_offset,
        }
    )


def add_routes(app: web.Application) -> None:
    get, post = app.router.add_get, app.router.add_post
    get("/api/cluster", guarded(cluster))
    get("/api/topics", guarded(topics))
    post("/api/topics", guarded(create_topic))
    get("/api/topics/{topic}", guarded(topic_detail))
    get("/api/groups", guarded(groups))
    get("/api/groups/{group}", guarded(group_detail))
    post("/api/groups/{group}/reset", guarded(reset_offset))
    get("/api/messages", guarded(messages))
    post("/api/messages", guarded(send_message))
