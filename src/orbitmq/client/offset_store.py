"""Consumer offset stores: where a consumer group's progress per queue lives.

- `RemoteBrokerOffsetStore` (CLUSTERING): an in-memory table, committed to the queue's broker
  (UPDATE_CONSUMER_OFFSET) every few seconds and on shutdown; read back with QUERY_CONSUMER_OFFSET.
  The broker calls go through an `OffsetBackend`, so this module knows nothing of connections.
- `LocalFileOffsetStore` (BROADCASTING): every consumer keeps its own progress in
  `<dir>/<clientId>/<group>/offsets.json`, RocketMQ's layout (fact sheet 4.9):
  `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:12}}` — MessageQueue objects as keys,
  which is not standard JSON, so it has its own small reader and writer here. Files are replaced as
  RocketMQ's MixAll.string2File does (`.tmp` written, old copied to `.bak`, rename), and a broken or
  missing file falls back to `.bak`.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import orjson

from orbitmq.common.errors import BrokerError, ClientError
from orbitmq.message.model import MessageQueue


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class OffsetNotFoundError(BrokerError):
    """The broker has no offset for the queue (QUERY_NOT_FOUND): the group consumes it for the first time."""


class OffsetBackend(Protocol):
    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int:
        """The committed offset; raises OffsetNotFoundError when the broker has none."""
        ...

    async def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int) -> None: ...


class OffsetStore(Protocol):
    async def load(self) -> None: ...

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool = False) -> None: ...

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        """The offset, -1 when none is known, -2 when reading it failed."""
        ...

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None: ...

    async def persist(self, mq: MessageQueue) -> None: ...

    def remove_offset(self, mq: MessageQueue) -> None: ...

    def offsets(self, topic: str | None = None) -> dict[MessageQueue, int]: ...


class _MemoryTable:
    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool = False) -> None:
        current = self.table.get(mq)
        if current is None or not increase_only or offset > current:
            self.table[mq] = offset

    def remove_offset(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    def offsets(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return {mq: o for mq, o in self.table.items() if topic is None or mq.topic == topic}


class RemoteBrokerOffsetStore(_MemoryTable):
    def __init__(self, group: str, backend: OffsetBackend) -> None:
        super().__init__()
        self.group = group
        self.backend = backend
        self._persisted: dict[MessageQueue, int] = {}

    async def load(self) -> None:
        return None

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        if read_type is not ReadOffsetType.READ_FROM_STORE:
            offset = self.table.get(mq)
            if offset is not None or read_type is ReadOffsetType.READ_FROM_MEMORY:
                return -1 if offset is None else offset
        try:
            offset = await self.backend.query_consumer_offset(self.group, mq)
        except OffsetNotFoundError:
            return -1
        except Exception:
            return -2
        self.update_offset(mq, offset)
        self._persisted[mq] = offset
        return offset

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in set(mqs):
            await self.persist(mq)

    async def persist(self, mq: MessageQueue) -> None:
        offset = self.table.get(mq)
        # Committing an unchanged offset again is harmless but costs a request per queue every 5 s.
        if offset is None or self._persisted.get(mq) == offset:
            return
        await self.backend.update_consumer_offset(self.group, mq, offset)
        self._persisted[mq] = offset

    def remove_offset(self, mq: MessageQueue) -> None:
        super().remove_offset(mq)
        self._persisted.pop(mq, None)


_ENTRY = re.compile(r"(\{[^{}]*\})\s*:\s*(-?\d+)")


def encode_offsets_json(table: dict[MessageQueue, int]) -> str:
    """offsets.json text, fastjson's pretty layout with MessageQueue objects as keys."""
    entries = []
    for mq, offset in sorted(table.items()):
        key = (
            "{\n\t\t\t"
            f'"brokerName":{orjson.dumps(mq.broker_name).decode()},\n\t\t\t'
            f'"queueId":{mq.queue_id},\n\t\t\t'
            f'"topic":{orjson.dumps(mq.topic).decode()}\n\t\t'
            "}"
        )
        entries.append(f"{key}:{offset}")
    return '{\n\t"offsetTable":{' + ",".join(entries) + "\n\t}\n}"


def decode_offsets_json(text: str) -> dict[MessageQueue, int]:
    text = text.strip()
    if not text.startswith("{") or '"offsetTable"' not in text:
        raise ClientError("not an offsets.json document")
    table: dict[MessageQueue, int] = {}
    body = text[text.index('"offsetTable"') :]
    for key_json, offset in _ENTRY.findall(body):
        key = orjson.loads(key_json)
        table[MessageQueue(str(key["topic"]), str(key["brokerName"]), int(key["queueId"]))] = int(offset)
    return table


def write_file_atomically(path: Path, text: str) -> None:
    """MixAll.string2File: write `.tmp`, keep the old content as `.bak`, then rename `.tmp` into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        path.with_name(path.name + ".bak").write_bytes(path.read_bytes())
    os.replace(tmp, path)


def default_offset_dir() -> Path:
    return Path(os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR", Path.home() / ".rocketmq_offsets"))


class LocalFileOffsetStore(_MemoryTable):
    def __init__(self, client_id: str, group: str, base_dir: Path | None = None) -> None:
        super().__init__()
        self.group = group
        self.path = (base_dir or default_offset_dir()) / client_id / group / "offsets.json"

    def _read_file(self) -> dict[MessageQueue, int]:
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                text = candidate.read_text(encoding="utf-8")
                if text.strip():
                    return decode_offsets_json(text)
            except (OSError, ValueError, KeyError, orjson.JSONDecodeError):
                continue
        return {}

    async def load(self) -> None:
        for mq, offset in self._read_file().items():
            self.table.setdefault(mq, offset)

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        if read_type is not ReadOffsetType.READ_FROM_STORE:
            offset = self.table.get(mq)
            if offset is not None or read_type is ReadOffsetType.READ_FROM_MEMORY:
                return -1 if offset is None else offset
        stored = self._read_file().get(mq)
        if stored is None:
            return -1
        self.update_offset(mq, stored)
        return stored

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        table = {mq: o for mq, o in self.table.items() if mq in wanted}
        if table:
            write_file_atomically(self.path, encode_offsets_json(table))

    async def persist(self, mq: MessageQueue) -> None:
        await self.persist_all(self.table)
