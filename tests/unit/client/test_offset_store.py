"""Offset stores: the in-memory rules, offsets.json layout (fact sheet 4.9) and the .bak fallback."""

from __future__ import annotations

from pathlib import Path

from orbitmq.client.offset_store import (
    LocalFileOffsetStore,
    OffsetNotFoundError,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
    decode_offsets_json,
    encode_offsets_json,
)
from orbitmq.message.model import MessageQueue

MQ0 = MessageQueue("T", "broker-a", 0)
MQ1 = MessageQueue("T", "broker-a", 1)


def test_offsets_json_layout_has_object_keys() -> None:
    text = encode_offsets_json({MQ1: 7, MQ0: 12})
    assert text.startswith('{\n\t"offsetTable":{{')
    assert '"brokerName":"broker-a"' in text and '"queueId":0' in text and "}:12" in text
    assert decode_offsets_json(text) == {MQ0: 12, MQ1: 7}


def test_decode_accepts_compact_java_output() -> None:
    text = (
        '{"offsetTable":{{"brokerName":"b","queueId":3,"topic":"%RETRY%G"}:-1,'
        '{"brokerName":"b","queueId":0,"topic":"T"}:5}}'
    )
    assert decode_offsets_json(text) == {MessageQueue("%RETRY%G", "b", 3): -1, MessageQueue("T", "b", 0): 5}


async def test_local_store_round_trip_and_bak_fallback(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("127.0.0.1@c1", "G", tmp_path)
    store.update_offset(MQ0, 3)
    store.update_offset(MQ0, 2, increase_only=True)
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 3
    await store.persist_all([MQ0])
    path = tmp_path / "127.0.0.1@c1" / "G" / "offsets.json"
    assert path.exists()
    store.update_offset(MQ0, 9)
    await store.persist_all([MQ0])
    assert (path.parent / "offsets.json.bak").exists()

    reloaded = LocalFileOffsetStore("127.0.0.1@c1", "G", tmp_path)
    await reloaded.load()
    assert await reloaded.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 9
    assert await reloaded.read_offset(MQ1, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == -1

    path.write_text("garbage{", encoding="utf-8")  # torn main file: the .bak (offset 3) is used
    fallback = LocalFileOffsetStore("127.0.0.1@c1", "G", tmp_path)
    await fallback.load()
    assert await fallback.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 3


class MemoryBroker:
    def __init__(self) -> None:
        self.offsets: dict[MessageQueue, int] = {}
        self.updates = 0

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int:
        if mq not in self.offsets:
            raise OffsetNotFoundError(22, "not found")
        return self.offsets[mq]

    async def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        self.updates += 1
        self.offsets[mq] = offset


async def test_remote_store_persists_only_changes() -> None:
    broker = MemoryBroker()
    store = RemoteBrokerOffsetStore("G", broker)
    assert await store.read_offset(MQ0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == -1
    store.update_offset(MQ0, 5)
    await store.persist_all([MQ0])
    await store.persist_all([MQ0])
    assert broker.offsets[MQ0] == 5 and broker.updates == 1
    other = RemoteBrokerOffsetStore("G", broker)
    assert await other.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 5
