"""Reading a send request: the SEND_MESSAGE / SEND_MESSAGE_V2 header and the properties the broker stores.

Two readers of the header give the same answer (a hypothesis test holds them together): `send_header`
as RocketMQ's Java reads it, with its remarks, and `fast_v2_header`, one pass over the usual header.
Compiled with mypyc: methods are called on their receivers and constants are `Final` (C statics).
"""

from __future__ import annotations

from typing import Final

from orbitmq.broker.processors.base import Fields
from orbitmq.message import properties as P
from orbitmq.message.hosts import pack_address, pack_host
from orbitmq.protocol.java_values import INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, parse_boolean
from orbitmq.transport.connection import Connection

# Header V2 short name -> V1 long name (fact sheet 3.1).
V2_TO_V1: Final[dict[str, str]] = {
    "a": "producerGroup",
    "b": "topic",
    "c": "defaultTopic",
    "d": "defaultTopicQueueNums",
    "e": "queueId",
    "f": "sysFlag",
    "g": "bornTimestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsumeTimes",
    "k": "unitMode",
    "l": "maxReconsumeTimes",
    "m": "batch",
    "n": "bname",
}
V2_NAMES: Final[dict[str, str]] = {long: short for short, long in V2_TO_V1.items()}
V1_NAMES: Final[dict[str, str]] = {long: long for long in V2_TO_V1.values()}

# Properties that need the full property map (delay redirect, transactions); others take the fast path.
DELAY_ENTRY: Final = P.DELAY + "\x01"
TRAN_MSG_ENTRY: Final = P.TRAN_MSG + "\x01"
# With START_DELIVER_TIME, what a property asking for a delivery time contains (TIMER_DELIVER_MS,
# TIMER_DELAY_SEC/MS): the send path's cheap test before it parses properties (services/timer.py reads them).
TIMER_MARK: Final = "TIMER_"
_DROPPED_PREFIXES: Final = (P.WAIT + "\x01", P.CLUSTER + "\x01")


_WAIT_ENTRY: Final = P.WAIT + "\x01"
_CLUSTER_ENTRY: Final = P.CLUSTER + "\x01"
_WAIT_TRUE_TAIL: Final = "\x02" + P.WAIT + "\x01true"  # where RocketMQ's clients put WAIT: last


def plain_properties(text: str, cluster: str) -> tuple[str, bool]:
    """The stored properties string (WAIT removed, CLUSTER set) and whether the sender waits for the store."""
    if text.endswith(_WAIT_TRUE_TAIL):
        # What clients send: "...<0x02>WAIT<0x01>true" last. Cut it off when the rest is already clean (no
        # other WAIT or CLUSTER entry, no empty segment), which is what the general path would keep.
        kept = text[: len(text) - len(_WAIT_TRUE_TAIL)]
        if (
            kept
            and _WAIT_ENTRY not in kept
            and _CLUSTER_ENTRY not in kept
            and "\x02\x02" not in kept
            and not kept.startswith("\x02")
            and not kept.endswith("\x02")
        ):
            return kept + "\x02" + _CLUSTER_ENTRY + cluster, True
    return plain_properties_general(text, cluster)


def plain_properties_general(text: str, cluster: str) -> tuple[str, bool]:
    wait = True
    if _WAIT_ENTRY in text or _CLUSTER_ENTRY in text:
        kept = []
        for segment in text.split("\x02"):
            if segment.startswith(_DROPPED_PREFIXES):
                if segment == P.WAIT + "\x01false":
                    wait = False
                continue
            if segment:
                kept.append(segment)
        text = "\x02".join(kept)
    cluster_entry = _CLUSTER_ENTRY + cluster
    return (text + "\x02" + cluster_entry if text else cluster_entry), wait


# "0".."4095" -> the int: the usual values of a send header's small fields, read with one lookup.
_SMALL_INTS: Final[dict[str, int]] = {str(i): i for i in range(4096)}


def _small_int(text: str) -> int:
    """`_SMALL_INTS.get(text, -1)`, a one-digit text by arithmetic (most of a header's small fields: the
    table lookup hashes the fresh string first)."""
    if len(text) == 1:
        c = ord(text)
        return c - 48 if 48 <= c <= 57 else -1
    return _SMALL_INTS.get(text, -1)


SendHeader = tuple[str, str, str, int, int, int, int, int, str, int, int | None, bool]


def send_header(ext: dict[str, str], n: dict[str, str]) -> SendHeader:
    """The send header through `Fields`: every check, with RocketMQ's error remarks."""
    f = Fields(ext)
    producer_group = f.req_str(n["producerGroup"])
    topic = f.req_str(n["topic"])
    default_topic = f.req_str(n["defaultTopic"])
    default_queue_nums = f.req_int(n["defaultTopicQueueNums"])
    queue_id = f.req_int(n["queueId"])
    sys_flag = f.req_int(n["sysFlag"])
    born_timestamp = f.req_long(n["bornTimestamp"])
    flag = f.req_int(n["flag"])
    properties_text = f.opt_str(n["properties"]) or ""
    reconsume_times = f.opt_int(n["reconsumeTimes"], 0)
    max_name = n["maxReconsumeTimes"]
    max_reconsume_times = f.opt_int(max_name, -1) if max_name in ext else None
    batch = f.opt_bool(n["batch"], False)  # the flag, not the request code, picks the batch path
    return (
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
    )


def fast_v2_header(ext: dict[str, str]) -> SendHeader | None:
    """The V2 header of a well-formed request in one pass (our and Java's clients write it so); None if
    anything is missing, "null", not a plain decimal (signs, spaces) or out of range, so that
    `send_header` reads it as Java does, with the exact remark.
    """
    producer_group = ext.get("a")
    topic = ext.get("b")
    default_topic = ext.get("c")
    properties_text = ext.get("i")
    reconsume = ext.get("j")
    batch_text = ext.get("m")
    if (
        producer_group is None
        or topic is None
        or default_topic is None
        or producer_group == "null"
        or topic == "null"
        or default_topic == "null"
        or properties_text == "null"
        or reconsume == "null"
        or "l" in ext
    ):
        return None
    try:
        d, e, f, g, h = ext["d"], ext["e"], ext["f"], ext["g"], ext["h"]
    except KeyError:
        return None
    # The small fields (queue numbers, flags, reconsume times) are nearly always short canonical decimals:
    # read by `_small_int` instead of isdecimal + int() + range checks.
    default_queue_nums = _small_int(d)
    queue_id = _small_int(e)
    sys_flag = _small_int(f)
    flag = _small_int(h)
    reconsume_times = 0 if reconsume is None else _small_int(reconsume)
    if default_queue_nums < 0 or queue_id < 0 or sys_flag < 0 or flag < 0 or reconsume_times < 0:
        # plain unsigned decimals only (what int() and Java's parseInt agree on); signs, spaces and
        # everything odd go through `send_header`, which reads them as Java does
        if not (
            d.isdecimal()
            and e.isdecimal()
            and f.isdecimal()
            and h.isdecimal()
            and (reconsume is None or reconsume.isdecimal())
        ):
            return None
        default_queue_nums = int(d)
        queue_id = int(e)
        sys_flag = int(f)
        flag = int(h)
        reconsume_times = 0 if reconsume is None else int(reconsume)
        if not (
            INT_MIN <= default_queue_nums <= INT_MAX
            and INT_MIN <= queue_id <= INT_MAX
            and INT_MIN <= sys_flag <= INT_MAX
            and INT_MIN <= flag <= INT_MAX
            and INT_MIN <= reconsume_times <= INT_MAX
        ):
            return None
    # (isdigit, not isdecimal: compiled, it is a native call. A digit int() cannot read is not a decimal
    # either: None, as before. Up to 18 digits is inside Java's long range without comparing big ints.)
    if not g.isdigit():
        return None
    try:
        born_timestamp = int(g)
    except ValueError:
        return None
    if len(g) > 18 and not LONG_MIN <= born_timestamp <= LONG_MAX:
        return None
    # C++ clients write "0"/"1"; the usual "false" skips the call
    batch = batch_text is not None and batch_text != "false" and parse_boolean(batch_text)
    return (
        producer_group,
        topic,
        default_topic,
        default_queue_nums,
        queue_id,
        sys_flag,
        born_timestamp,
        flag,
        properties_text or "",
        reconsume_times,
        None,
        batch,
    )


def born_host(conn: Connection) -> bytes:
    """The producer's address as stored in BORNHOST (packed once per connection)."""
    packed = conn.state.get("born_host")
    if isinstance(packed, bytes):
        return packed
    packed = pack_address(conn.remote_address) if conn.remote_address else pack_host("127.0.0.1", 0)
    conn.state["born_host"] = packed
    return packed
