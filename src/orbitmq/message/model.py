"""The message model shared by every layer: what a user sends, what a store holds, where it lives.

- `Message`: what a producer sends (topic, body, flag, properties). Tags, keys and delay level are
  properties, as in RocketMQ; the accessors keep their names in one place.
- `MessageExt`: a stored message as decoded from a commit-log record (pull, query and view bodies).
- `MessageQueue`: (topic, broker name, queue id), ordered and hashable, as RocketMQ sorts queues.

This module holds values only: no I/O, no encoding (that is `orbitmq.message.codec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.message import properties as P


@dataclass(slots=True)
class Message:
    topic: str
    body: bytes
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        topic: str,
        body: bytes | str,
        *,
        tags: str | None = None,
        keys: str | list[str] | None = None,
        flag: int = 0,
        delay_level: int = 0,
        properties: dict[str, str] | None = None,
    ) -> Message:
        """A message with the common attributes set; `str` bodies are encoded as UTF-8."""
        msg = cls(
            topic, body.encode() if isinstance(body, str) else bytes(body), flag, dict(properties or {})
        )
        if tags:
            msg.tags = tags
        if keys:
            msg.keys = keys if isinstance(keys, str) else " ".join(keys)
        if delay_level:
            msg.delay_level = delay_level
        return msg

    @property
    def tags(self) -> str | None:
        return self.properties.get(P.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(P.TAGS, value)

    @property
    def keys(self) -> str | None:
        """Space-separated keys, each indexed by the broker (query with `queryMsgByKey`)."""
        return self.properties.get(P.KEYS)

    @keys.setter
    def keys(self, value: str | None) -> None:
        self._set(P.KEYS, value)

    @property
    def key_list(self) -> list[str]:
        return [k for k in (self.keys or "").split(" ") if k]

    @property
    def delay_level(self) -> int:
        value = self.properties.get(P.DELAY)
        return int(value) if value else 0

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        self._set(P.DELAY, str(level) if level > 0 else None)

    @property
    def wait_store_msg_ok(self) -> bool:
        return self.properties.get(P.WAIT, "true") != "false"

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, wait: bool) -> None:
        self._set(P.WAIT, None if wait else "false")

    @property
    def unique_id(self) -> str | None:
        """The client-generated message id (UNIQ_KEY), what users know as the message id."""
        return self.properties.get(P.UNIQ_KEY)

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value


@dataclass(slots=True)
class MessageExt(Message):
    """A stored message, as decoded from its commit-log record."""

    queue_id: int = 0
    store_size: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = ""  # "ip:port" ("[v6]:port" for IPv6)
    store_timestamp: int = 0
    store_host: str = ""  # "ip:port"
    offset_msg_id: str = ""  # broker id: store host + commit-log offset, uppercase hex (fact sheet 5.5)
    commit_log_offset: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0

    @property
    def msg_id(self) -> str:
        """What RocketMQ's listeners report as the id: UNIQ_KEY when present, else the offset id."""
        return self.unique_id or self.offset_msg_id


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """A queue of a topic on one broker group. Orders as RocketMQ's MessageQueue.compareTo does."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"
