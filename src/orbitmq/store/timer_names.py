"""Names and values of RocketMQ 5's timer messages shared by the broker's timer service and the gRPC proxy:
the message properties, the rounding of a delivery time to its wheel slot, and the recall handle."""

from __future__ import annotations

import base64
import binascii
from typing import Final

TIMER_TOPIC: Final = "rmq_sys_wheel_timer"
START_DELIVER_TIME: Final = "__STARTDELIVERTIME"  # Aliyun ONS clients' absolute delivery time (ms)
TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
TIMER_OUT_MS: Final = "TIMER_OUT_MS"
TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"
TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"


def out_ms(deliver_ms: int, precision_ms: int) -> int:
    """The slot time of a delivery time: the slot starting before it (RocketMQ's rounding); the slot is
    delivered when it ends, so never before `deliver_ms` and less than one precision after it."""
    if deliver_ms % precision_ms == 0:
        return deliver_ms - precision_ms
    return deliver_ms // precision_ms * precision_ms


def recall_handle(topic: str, broker_name: str, out: int, message_id: str) -> str:
    """RocketMQ 5's recall handle (v1): url-safe base64 of "v1 topic broker timestamp id"."""
    raw = " ".join(("v1", topic, broker_name, str(out + 1), message_id))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_recall_handle(handle: str) -> tuple[str, str, int, str]:
    """(topic, broker name, timestamp ms, message id) of a v1 recall handle; ValueError when invalid."""
    try:
        items = base64.urlsafe_b64decode(handle.encode()).decode().split(" ")
        if len(items) < 5 or items[0] != "v1":
            raise ValueError
        return items[1], items[2], int(items[3]), items[4]
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ValueError("recall handle is invalid") from None


def delete_key(topic: str, message_id: str) -> str:
    return f"{topic}+{message_id}"
