"""Hostile remoting frames for the fuzz driver (`orbitmq.testing.fuzz`): pure functions of a seeded RNG.

Each case is `(kind, target, frames)`: what it is, "broker" or "namesrv", and the bytes to write.
Names never collide with the healthy pair's: legal ones come from a small `Fz` pool (bounded table
growth), illegal ones carry the marker `fzx`, so the driver can look for escaped files by name.
"""

from __future__ import annotations

import functools
import random
import struct
import zlib
from collections.abc import Callable

import orjson

from orbitmq.protocol.codes import RequestCode, SerializeType
from orbitmq.protocol.command import RemotingCommand, encode_command_bytes

MARKER = "fzx"
HOSTILE_NAMES = (
    f"../../{MARKER}_a",
    f"/../../../{MARKER}_b",
    f"../../../../../../tmp/{MARKER}_c",
    f"{MARKER}\n",
    f"{MARKER} d",
    f"{MARKER}." * 40,
    "x" * 300,
    "",
    "   ",
    "null",
    "%RETRY%" + "g" * 200,
    f"{MARKER}\x00e",
    "tópico",
)
LEGAL_NAMES = tuple(f"Fz{i}" for i in range(24))
NUMBERS = (
    "0",
    "1",
    "-1",
    "7",
    "2147483648",
    "-9223372036854775809",
    "99999999999999999999",
    "٣",
    "1_0",
    " 3",
    "abc",
    "",
)
KEYS = (
    "topic",
    "consumerGroup",
    "producerGroup",
    "group",
    "groupName",
    "originTopic",
    "queueId",
    "queueOffset",
    "maxMsgNums",
    "sysFlag",
    "commitOffset",
    "suspendTimeoutMillis",
    "subscription",
    "subVersion",
    "offset",
    "delayLevel",
    "brokerName",
    "brokerAddr",
    "clusterName",
    "haServerAddr",
    "brokerId",
    "namespace",
    "key",
    "value",
    "timestamp",
    "beginTimestamp",
    "endTimestamp",
    "maxNum",
    "readQueueNums",
    "writeQueueNums",
    "perm",
    "defaultTopic",
    "compressed",
    "clientID",
    *"abcdefghijklmn",
)
EXCLUDED_CODES = frozenset(
    {
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.UPDATE_NAMESRV_CONFIG,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.UNREGISTER_BROKER,
    }
)
NAMESRV_CODES = tuple(
    c
    for c in (
        RequestCode.PUT_KV_CONFIG,
        RequestCode.GET_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.REGISTER_BROKER,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.GET_KVLIST_BY_NAMESPACE,
        RequestCode.GET_TOPICS_BY_CLUSTER,
        RequestCode.QUERY_DATA_VERSION,
    )
)
ALL_CODES = tuple(c for c in RequestCode if c not in EXCLUDED_CODES)
# Admin requests that rewrite config files (topics, groups): the costly ones (see --no-admin).
ADMIN_WRITE_CODES = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)

Case = tuple[str, str, list[bytes]]


@functools.lru_cache(maxsize=2)
def _bomb(inflated: int) -> bytes:
    return zlib.compress(bytes(inflated), 9)


def _request(code: int, ext: dict[str, str], body: bytes = b"", *, binary: bool = False) -> bytes:
    cmd = RemotingCommand.request(code, ext, body)
    if binary:
        cmd.serialize_type = SerializeType.ROCKETMQ
    return encode_command_bytes(cmd)


class CaseMaker:
    """Draws hostile cases; `bomb` is a small zlib stream that inflates to `bomb_inflated` bytes.

    The mix: broken framing, random bytes, every request code with mutated header fields (illegal names,
    out-of-range and non-Java numbers, "null", long values), malformed and hostile JSON bodies, oversized
    headers and ext maps, zlib bombs and request sequences (held pulls then an abrupt close,
    create/send/pull/delete of a throwaway topic, heartbeats and lock batches with hostile groups). Codes
    that legitimately change a whole server (config updates, write-perm wipes, broker unregistration) are
    left out: they are access-control questions, not input validation.
    """

    def __init__(self, seed: int, *, bomb_inflated: int = 96 * 1024 * 1024, admin: bool = True) -> None:
        self.rng = random.Random(seed)
        self.codes = ALL_CODES if admin else tuple(c for c in ALL_CODES if c not in ADMIN_WRITE_CODES)
        self.bomb = _bomb(bomb_inflated)
        self._cases: list[tuple[int, Callable[[], Case]]] = [
            (3, self.random_bytes),
            (3, self.broken_framing),
            (30, self.mutated_request),
            (8, self.hostile_body),
            (1, self.oversized_header),
            (2, self.oversized_ext_map),
            (1, self.zlib_bomb),
            (4, self.held_pulls_then_close),
            (4 if admin else 0, self.topic_lifecycle),
            (4, self.heartbeat_and_locks),
        ]
        self._weights = [w for w, _ in self._cases]

    def next(self) -> Case:
        (_, make) = self.rng.choices(self._cases, self._weights)[0]
        return make()

    # ---- values -----------------------------------------------------------------------------
    def name(self) -> str:
        return self.rng.choice(HOSTILE_NAMES) if self.rng.random() < 0.6 else self.rng.choice(LEGAL_NAMES)

    def value(self) -> str:
        r = self.rng.random()
        if r < 0.4:
            return self.name()
        if r < 0.8:
            return self.rng.choice(NUMBERS)
        if r < 0.9:
            return "true" if self.rng.random() < 0.5 else "1"
        return "v" * self.rng.randrange(1, 5000)

    def ext(self) -> dict[str, str]:
        return {self.rng.choice(KEYS): self.value() for _ in range(self.rng.randrange(0, 14))}

    def target(self, code: int) -> str:
        return "namesrv" if code in NAMESRV_CODES else "broker"

    # ---- cases ------------------------------------------------------------------------------
    def random_bytes(self) -> Case:
        blob = self.rng.randbytes(self.rng.randrange(1, 512))
        return "random bytes", self.rng.choice(("broker", "namesrv")), [blob]

    def broken_framing(self) -> Case:
        choices = (
            struct.pack(">i", 0x7FFFFFFF) + b"x" * 16,
            struct.pack(">i", -5) + b"x" * 8,
            struct.pack(">i", 2) + b"xx",
            struct.pack(">iI", 8, 1000) + b"abcd",
            struct.pack(">iI", 6, 2) + b"{]",
            struct.pack(">iI", 6, (7 << 24) | 2) + b"{}",
            struct.pack(">iI", 7, (1 << 24) | 3) + b"\x00\x0a\x00",
        )
        return "broken framing", self.rng.choice(("broker", "namesrv")), [self.rng.choice(choices)]

    def mutated_request(self) -> Case:
        code = self.rng.choice(self.codes)
        body = b"" if self.rng.random() < 0.6 else self.rng.randbytes(self.rng.randrange(1, 300))
        frame = _request(code, self.ext(), body, binary=self.rng.random() < 0.3)
        return "mutated request", self.target(code), [frame]

    def hostile_body(self) -> Case:
        code = self.rng.choice(
            (
                RequestCode.HEART_BEAT,
                RequestCode.LOCK_BATCH_MQ,
                RequestCode.UNLOCK_BATCH_MQ,
                RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
                if self.codes is ALL_CODES
                else RequestCode.LOCK_BATCH_MQ,
                RequestCode.REGISTER_BROKER,
                RequestCode.QUERY_DATA_VERSION,
                RequestCode.SEND_BATCH_MESSAGE,
            )
        )
        shapes: list[object] = [
            {"groupName": self.name(), "consumerGroup": self.name(), "clientId": self.name()},
            {
                "consumerDataSet": [
                    {"groupName": self.name(), "subscriptionDataSet": [{"topic": self.name()}]}
                ]
            },
            {"producerDataSet": [{"groupName": self.name()}], "clientID": "x"},
            {
                "mqSet": [
                    {"topic": self.name(), "brokerName": "b", "queueId": self.rng.choice((0, -1, 2**40))}
                ]
            },
            {"topicConfigSerializeWrapper": {"topicConfigTable": {self.name(): {"topicName": self.name()}}}},
            [1, 2, 3],
            "string",
            {"nested": [[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]]},
        ]
        body = orjson.dumps(self.rng.choice(shapes))
        if self.rng.random() < 0.2:
            body = body[: self.rng.randrange(len(body))]  # truncated JSON
        ext = self.ext()
        if code == RequestCode.REGISTER_BROKER:
            ext.update(
                brokerName="fz-b", brokerAddr="127.0.0.1:1", clusterName="FzC", haServerAddr="x", brokerId="0"
            )
        return "hostile body", self.target(code), [_request(code, ext, body)]

    def oversized_header(self) -> Case:
        ext = {"topic": "Fz0", "queueId": "0", "x": "y" * 700_000}
        code = self.rng.choice((RequestCode.GET_MAX_OFFSET, RequestCode.GET_ROUTEINFO_BY_TOPIC))
        return "oversized header", self.target(code), [_request(code, ext, binary=self.rng.random() < 0.5)]

    def oversized_ext_map(self) -> Case:
        ext = {f"k{i}": "v" for i in range(self.rng.randrange(1100, 20_000))}
        code = self.rng.choice((RequestCode.GET_MAX_OFFSET, RequestCode.GET_ROUTEINFO_BY_TOPIC))
        return "oversized ext map", self.target(code), [_request(code, ext, binary=self.rng.random() < 0.5)]

    def zlib_bomb(self) -> Case:
        ext = {
            "brokerName": "fz-bomb",
            "brokerAddr": "127.0.0.1:1",
            "clusterName": "FzC",
            "haServerAddr": "127.0.0.1:2",
            "brokerId": "0",
            "compressed": "true",
        }
        return "zlib bomb", "namesrv", [_request(RequestCode.REGISTER_BROKER, ext, self.bomb)]

    def held_pulls_then_close(self) -> Case:
        topic = self.rng.choice(LEGAL_NAMES)
        ext = {
            "consumerGroup": "FzG",
            "topic": topic,
            "queueId": "0",
            "queueOffset": "0",
            "maxMsgNums": "32",
            "sysFlag": "6",
            "commitOffset": "0",
            "suspendTimeoutMillis": "30000",
            "subVersion": "0",
            "subscription": "*",
        }
        frames = [_request(RequestCode.PULL_MESSAGE, ext) for _ in range(self.rng.randrange(1, 40))]
        return "held pulls then close", "broker", frames

    def topic_lifecycle(self) -> Case:
        topic = self.rng.choice(LEGAL_NAMES) if self.rng.random() < 0.7 else self.name()
        create = {
            "topic": topic,
            "defaultTopic": "TBW102",
            "readQueueNums": self.rng.choice(("1", "4", "0", "5000", "-1")),
            "writeQueueNums": "1",
            "perm": self.rng.choice(("6", "0", "99")),
            "topicFilterType": "SINGLE_TAG",
        }
        send = {
            "a": "FzPG",
            "b": topic,
            "c": "TBW102",
            "d": "4",
            "e": "0",
            "f": "0",
            "g": "0",
            "h": "0",
            "i": "",
        }
        pull = {
            "consumerGroup": "FzG",
            "topic": topic,
            "queueId": "0",
            "queueOffset": "0",
            "maxMsgNums": "8",
            "sysFlag": "4",
            "commitOffset": "0",
            "suspendTimeoutMillis": "0",
            "subVersion": "0",
            "subscription": "*",
        }
        frames = [
            _request(RequestCode.UPDATE_AND_CREATE_TOPIC, create),
            _request(RequestCode.SEND_MESSAGE_V2, send, b"fuzz"),
            _request(RequestCode.PULL_MESSAGE, pull),
            _request(
                RequestCode.CONSUMER_SEND_MSG_BACK,
                # the DLQ/retry topic is built from the group: the classic way out of the store
                {
                    "offset": "0",
                    "group": self.rng.choice(HOSTILE_NAMES),
                    "delayLevel": self.rng.choice(("-1", "1")),
                },
            ),
            _request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic}),
        ]
        return "topic lifecycle", "broker", frames

    def heartbeat_and_locks(self) -> Case:
        group = self.name()
        heartbeat = {
            "clientID": f"fz@{self.rng.randrange(1000)}",
            "consumerDataSet": [
                {
                    "groupName": group,
                    "consumeType": "CONSUME_PASSIVELY",
                    "messageModel": "CLUSTERING",
                    "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                    "subscriptionDataSet": [{"topic": self.name(), "subString": "*"}],
                }
            ],
            "producerDataSet": [{"groupName": self.name()}],
        }
        lock = {
            "consumerGroup": group,
            "clientId": "fz@1",
            "mqSet": [{"topic": self.name(), "brokerName": "b", "queueId": 0}],
        }
        frames = [
            _request(RequestCode.HEART_BEAT, {}, orjson.dumps(heartbeat)),
            _request(RequestCode.LOCK_BATCH_MQ, {}, orjson.dumps(lock)),
            _request(RequestCode.UNLOCK_BATCH_MQ, {}, orjson.dumps(lock)),
            _request(RequestCode.UNREGISTER_CLIENT, {"clientID": "fz@1", "consumerGroup": group}),
        ]
        return "heartbeat and locks", "broker", frames
