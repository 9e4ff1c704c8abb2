"""Timer messages (RocketMQ 5's timer wheel) against a real `orbitmq serve`: any delivery time from the
4.x properties, within a second of it and never before; recall; delay levels beside them; the wheel
surviving a kill -9; many pending timers in bounded memory."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from orbitmq.message.model import MessageExt
from orbitmq.protocol.codes import ResponseCode
from orbitmq.store.timer_names import out_ms, recall_handle
from orbitmq.testing.launch import start_serve
from orbitmq.transport import RemotingClient

from .conftest import FAST_CONF, Raw, messages

RECALL_MESSAGE = 370


async def _receive(raw: Raw, topic: str, count: int, *, within: float, offset: int = 0) -> list[MessageExt]:
    """Pulls queue 0 of `topic` until `count` messages came, or `within` seconds passed."""
    got: list[MessageExt] = []
    deadline = time.monotonic() + within
    while len(got) < count and time.monotonic() < deadline:
        response = await raw.pull(topic, 0, offset + len(got), suspend_ms=300, timeout=5)
        if response.code == ResponseCode.SUCCESS:
            got.extend(messages(response))
        else:
            await asyncio.sleep(0.05)
    return got


def _rss_anon_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon")


async def test_timer_properties_deliver_within_a_second_never_before(raw: Raw) -> None:
    await raw.create_topic("TimerT", queues=1)
    now = int(time.time() * 1000)
    asks = [
        ({"TIMER_DELAY_MS": "1700"}, now + 1700),
        ({"TIMER_DELAY_SEC": "2"}, now + 2000),
        ({"TIMER_DELIVER_MS": str(now + 2300)}, now + 2300),
        ({"__STARTDELIVERTIME": str(now + 1200)}, now + 1200),
    ]
    for props, _ in asks:
        sent = await raw.send("TimerT", b"x" * 10, props={**props, "UNIQ_KEY": str(props)})
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    first = await raw.pull("TimerT", 0, 0)
    assert first.code != ResponseCode.SUCCESS  # nothing there yet
    got = await _receive(raw, "TimerT", len(asks), within=10)
    assert len(got) == len(asks)
    by_key = {m.properties["UNIQ_KEY"]: m for m in got}
    for props, due in asks:
        msg = by_key[str(props)]
        late = msg.store_timestamp - due  # the broker's clock put it in the real topic then
        assert 0 <= late <= 1100, (props, late)
        assert "REAL_TOPIC" not in msg.properties and msg.properties["TIMER_OUT_MS"]
    # sent by a 4.x-style send with a delay level as well: the level wins, the timer is ignored
    started = time.time()
    both = await raw.send("TimerT", b"level", props={"DELAY": "1", "TIMER_DELAY_SEC": "60"})
    assert both.code == ResponseCode.SUCCESS
    (leveled,) = await _receive(raw, "TimerT", 1, within=10, offset=len(asks))
    assert leveled.body == b"level" and 0.9 <= time.time() - started < 5
    assert "TIMER_DELAY_SEC" not in leveled.properties


async def test_timer_refusals(raw: Raw) -> None:
    await raw.create_topic("TimerBad", queues=1)
    too_far = await raw.send("TimerBad", b"x", props={"TIMER_DELAY_SEC": str(4 * 86400)})
    assert too_far.code == ResponseCode.MESSAGE_ILLEGAL and "timerMaxDelaySec" in (too_far.remark or "")
    not_number = await raw.send("TimerBad", b"x", props={"TIMER_DELAY_MS": "soon"})
    assert not_number.code == ResponseCode.MESSAGE_ILLEGAL
    passed = await raw.send("TimerBad", b"now", props={"TIMER_DELIVER_MS": "1000"})
    assert passed.code == ResponseCode.SUCCESS  # a time already passed: an ordinary message
    assert [m.body for m in messages(await raw.pull("TimerBad", 0, 0))] == [b"now"]


async def test_recalled_timer_never_arrives(raw: Raw) -> None:
    await raw.create_topic("TimerRecall", queues=1)
    await raw.create_topic("TimerOther", queues=1)
    due = int(time.time() * 1000) + 2000
    for key in ("keep", "drop"):
        sent = await raw.send(
            "TimerRecall", key.encode(), props={"TIMER_DELIVER_MS": str(due), "UNIQ_KEY": key}
        )
        assert sent.code == ResponseCode.SUCCESS
    handle = recall_handle("TimerRecall", "broker-a", out_ms(due, 1000), "drop")
    wrong = await raw.call(RECALL_MESSAGE, {"topic": "TimerOther", "recallHandle": handle})
    assert wrong.code != ResponseCode.SUCCESS and "topic not match" in (wrong.remark or "")
    bad = await raw.call(RECALL_MESSAGE, {"topic": "TimerRecall", "recallHandle": "not-a-handle"})
    assert bad.code != ResponseCode.SUCCESS and "invalid" in (bad.remark or "")
    recalled = await raw.call(RECALL_MESSAGE, {"topic": "TimerRecall", "recallHandle": handle})
    assert recalled.code == ResponseCode.SUCCESS, recalled.remark
    assert recalled.ext_fields["msgId"] == "drop"
    got = await _receive(raw, "TimerRecall", 2, within=4.5)
    assert [m.body for m in got] == [b"keep"]


async def test_pending_timers_survive_restart_and_kill_9(tmp_path: Path) -> None:
    """Timers pending over a clean restart, enqueued and checkpointed, enqueued after the last checkpoint,
    just sent: all arrive after a kill -9 and a restart, once each, none before its time; one delivered
    between the clean restart and the kill is not delivered again (the scan's progress is checkpointed)."""
    conf = {**FAST_CONF, "timerFlushIntervalMs": 500}
    sent: dict[str, int] = {}
    client = RemotingClient()

    async def send_timers(raw: Raw, keys: range, pause_after: tuple[int, ...] = ()) -> None:
        for i in keys:
            due = int(time.time() * 1000) + 8000
            props = {"TIMER_DELIVER_MS": str(due), "UNIQ_KEY": f"k{i}"}
            assert (await raw.send("TimerKill", b"k", props=props)).code == ResponseCode.SUCCESS
            sent[f"k{i}"] = due
            if i in pause_after:
                await asyncio.sleep(1.2)  # some checkpointed, some enqueued after it

    try:
        with start_serve(tmp_path, **conf) as serve:
            raw = Raw(client, serve.broker_addr, serve.address)
            await raw.create_topic("TimerKill", queues=1)
            await send_timers(raw, range(10))
            assert serve.stop() == 0
        with start_serve(tmp_path, **conf) as serve:
            raw = Raw(client, serve.broker_addr, serve.address)
            done = await raw.send("TimerKill", b"done", props={"TIMER_DELAY_MS": "300", "UNIQ_KEY": "done"})
            assert done.code == ResponseCode.SUCCESS
            assert [m.body for m in await _receive(raw, "TimerKill", 1, within=5)] == [b"done"]
            await send_timers(raw, range(10, 30), pause_after=(19,))
            serve.kill()
        await client.close()
        client = RemotingClient()
        with start_serve(tmp_path, **conf) as serve:
            raw = Raw(client, serve.broker_addr, serve.address)
            got = await _receive(raw, "TimerKill", len(sent), within=20, offset=1)
            again = await _receive(raw, "TimerKill", 1, within=1.5, offset=1 + len(got))
    finally:
        await client.close()
    keys = [m.properties["UNIQ_KEY"] for m in got]
    assert sorted(keys) == sorted(sent), (len(keys), len(sent))
    assert not again, [m.properties["UNIQ_KEY"] for m in again]  # each once, "done" too
    for msg in got:
        assert msg.store_timestamp >= sent[msg.properties["UNIQ_KEY"]]


async def test_many_pending_timers_stay_in_bounded_memory(raw: Raw, serve_proc: object) -> None:
    """50k pending timers: the broker's anonymous memory grows far less than a heap of them would hold."""
    await raw.create_topic("TimerMany", queues=1)
    pid = serve_proc.pid  # type: ignore[attr-defined]
    warm = await raw.send("TimerMany", b"w", props={"TIMER_DELAY_SEC": "3600"})
    assert warm.code == ResponseCode.SUCCESS
    before = _rss_anon_kb(pid)
    total, body = 50_000, b"b" * 100

    async def send_some(start: int) -> None:
        for i in range(start, total, 50):
            response = await raw.send("TimerMany", body, props={"TIMER_DELAY_SEC": str(600 + i % 3000)})
            assert response.code == ResponseCode.SUCCESS

    await asyncio.gather(*(send_some(s) for s in range(50)))
    await asyncio.sleep(1.0)  # enqueued into the wheel
    grown_kb = _rss_anon_kb(pid) - before
    print(f"RssAnon grew {grown_kb} kB for {total} pending timers")
    # a heap entry per timer (a tuple, the times, the offsets) alone would be > 150 bytes each: 7 MB
    assert grown_kb < 4 * 1024, grown_kb
    timer_log = serve_proc.workdir / "store" / "timerlog" / "timerlog"  # type: ignore[attr-defined]
    assert timer_log.stat().st_size >= total * 40  # all of them are in the wheel's log


async def test_the_timer_log_is_compacted_once_delivered(tmp_path: Path) -> None:
    """Over mappedFileSizeTimerLog and mostly delivered, the timer log is rewritten with what is pending."""
    client = RemotingClient()
    try:
        with start_serve(tmp_path, mappedFileSizeTimerLog=2000, timerFlushIntervalMs=200) as serve:
            raw = Raw(client, serve.broker_addr, serve.address)
            await raw.create_topic("TimerCompact", queues=1)
            pending = await raw.send("TimerCompact", b"p", props={"TIMER_DELAY_SEC": "600", "UNIQ_KEY": "p"})
            assert pending.code == ResponseCode.SUCCESS
            for _ in range(100):
                sent = await raw.send("TimerCompact", b"s", props={"TIMER_DELAY_MS": "300"})
                assert sent.code == ResponseCode.SUCCESS
            assert len(await _receive(raw, "TimerCompact", 100, within=10)) == 100
            timer_log = tmp_path / "store" / "timerlog" / "timerlog"
            deadline = time.monotonic() + 5
            while timer_log.stat().st_size > 40 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert timer_log.stat().st_size == 40  # the pending one
    finally:
        await client.close()
