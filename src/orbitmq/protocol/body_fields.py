"""Reading typed values out of parsed Java JSON, as fastjson's bean binding would, for the bodies.

fastjson is lenient when binding: missing properties keep the bean's defaults, numbers may arrive as
strings, unknown properties are ignored. These readers do the same and raise `BodyError` for values
that cannot be bound, so a broken body never escapes as a KeyError/TypeError. Also `JsonBody`, the
base of every body class, and the conversion of `MessageQueue` to and from its JSON object (also
used as a map key). Knows no particular body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Self, TypeVar

from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message.model import MessageQueue
from orbitmq.protocol import java_json
from orbitmq.protocol.java_json import ObjectKey

T = TypeVar("T")
Obj = Mapping[Any, Any]


class BodyError(RemoteProtocolError, ValueError):
    """A JSON body (or config file) that does not parse or does not bind to its type."""


def parse(data: java_json.Buffer | str, what: str) -> Obj:
    """Parse a body that must be a JSON object."""
    try:
        obj = java_json.loads(data)
    except ValueError as exc:
        raise BodyError(f"{what}: {exc}") from None
    if not isinstance(obj, dict):
        raise BodyError(f"{what}: not a JSON object")
    return obj


def as_obj(value: Any, what: str) -> Obj:
    if isinstance(value, ObjectKey):
        return value.as_dict()
    if not isinstance(value, Mapping):
        raise BodyError(f"{what} is not a JSON object: {value!r:.80}")
    return value


def get_str(obj: Obj, key: str, default: str | None = None) -> Any:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise BodyError(f"property {key} is not a string: {value!r:.80}")


def to_int(value: Any, what: str) -> int:
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise BodyError(f"{what} is not a number: {value!r}")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise BodyError(f"{what} is not a number: {value!r:.80}")


def get_int(obj: Obj, key: str, default: int = 0) -> int:
    value = obj.get(key)
    return default if value is None else to_int(value, f"property {key}")


def get_float(obj: Obj, key: str, default: float = 0.0) -> float:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise BodyError(f"property {key} is not a number: {value!r:.80}")


def get_bool(obj: Obj, key: str, default: bool = False) -> bool:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.lower() == "true"
    if isinstance(value, int):
        return value != 0
    raise BodyError(f"property {key} is not a boolean: {value!r:.80}")


def get_list(obj: Obj, key: str, item: Callable[[Any], T]) -> list[T]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise BodyError(f"property {key} is not an array: {value!r:.80}")
    return [item(v) for v in value]


def get_map(
    obj: Obj, key: str, key_of: Callable[[Any], Any], value_of: Callable[[Any], Any]
) -> dict[Any, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BodyError(f"property {key} is not an object: {value!r:.80}")
    return {key_of(k): value_of(v) for k, v in value.items()}


def str_item(value: Any) -> str:
    if not isinstance(value, str):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise BodyError(f"not a string: {value!r:.80}")
    return value


def int_item(value: Any) -> int:
    return to_int(value, "value")


def int_key(key: Any) -> int:
    """A Long/Integer map key: unquoted (`{0:..}`) or quoted (`{"0":..}`)."""
    return to_int(key, "map key")


def compact(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop null properties, as fastjson does."""
    return {k: v for k, v in obj.items() if v is not None}


class JsonBody:
    """Shared `to_json`/`from_json` over `to_obj`/`from_obj` (plain JSON values)."""

    __slots__ = ()

    def to_obj(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_obj(cls, obj: Mapping[Any, Any]) -> Self:
        raise NotImplementedError

    def to_json(self) -> bytes:
        return java_json.dumps(self.to_obj())

    def to_json_pretty(self) -> bytes:
        return java_json.dumps_pretty(self.to_obj())

    @classmethod
    def from_json(cls, data: java_json.Buffer | str) -> Self:
        return cls.from_any(parse(data, cls.__name__))

    @classmethod
    def from_any(cls, value: Any) -> Self:
        """Bind an already parsed JSON value; any binding failure is a BodyError."""
        try:
            return cls.from_obj(as_obj(value, cls.__name__))
        except BodyError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise BodyError(f"{cls.__name__}: {exc}") from None


# ------------------------------------------------------------------ MessageQueue


def mq_to_obj(mq: MessageQueue) -> dict[str, Any]:
    return {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}


def mq_from_obj(value: Any) -> MessageQueue:
    obj = as_obj(value, "MessageQueue")
    return MessageQueue(get_str(obj, "topic", ""), get_str(obj, "brokerName", ""), get_int(obj, "queueId"))


def mq_key(mq: MessageQueue) -> ObjectKey:
    """A MessageQueue as a map key, written as fastjson writes it: the object itself."""
    return ObjectKey.of(mq_to_obj(mq))


def mq_from_key(key: Any) -> MessageQueue:
    """Parse a MessageQueue map key: an object key, or its JSON text (fastjson's
    WriteNonStringKeyAsString form), or the toString form
    `MessageQueue [topic=T, brokerName=b, queueId=0]`."""
    if isinstance(key, str):
        if key.startswith("MessageQueue [") and key.endswith("]"):
            fields = dict(
                part.strip().split("=", 1)
                for part in key[len("MessageQueue [") : -1].split(",")
                if "=" in part
            )
            return mq_from_obj(fields)
        try:
            key = java_json.loads(key)
        except ValueError:
            raise BodyError(f"not a MessageQueue key: {key!r:.80}") from None
    return mq_from_obj(key)
