"""`orbitmq serve --brokers 2`: two real broker processes behind one nameserver process; a topic spread
over both takes every message sent and gives every one back."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

from orbitmq.client.instance import ClientInstance
from orbitmq.client.producer import Producer
from orbitmq.client.results import SendStatus
from orbitmq.message.model import Message, MessageQueue
from orbitmq.protocol.bodies_core import ClusterInfo
from orbitmq.testing import start_serve

from .conftest import Admin, broker_conf, client_config, eventually, unique

MESSAGES = 120


async def _brokers(instance: ClientInstance) -> dict[str, str]:
    """Broker name -> master address, as the nameserver reports them."""
    info = ClusterInfo.from_json(await instance.api.get_broker_cluster_info())
    return {
        name: data.broker_addrs[0] for name, data in info.broker_addr_table.items() if 0 in data.broker_addrs
    }


async def test_two_broker_processes_share_a_topic(tmp_path: Path) -> None:
    topic = unique("Spread")
    with start_serve(tmp_path, extra_args=["--brokers", "2"], **broker_conf()) as serve:
        async with Admin(serve) as admin, Producer("PG", config=client_config(serve)) as producer:
            found: dict[str, str] = {}

            async def registered() -> bool:
                found.update(await _brokers(admin.instance))
                return len(found) == 2

            await eventually(registered, what="two brokers registered")
            assert sorted(found) == ["broker-a-1", "broker-a-2"]
            assert len(set(found.values())) == 2  # own port each
            for addr in found.values():
                await admin.instance.api.create_topic(addr, topic, read_queue_nums=4, write_queue_nums=4)

            async def routed() -> bool:
                route = await admin.instance.api.get_topic_route(topic)
                return route is not None and len(route.queue_datas) == 2

            await eventually(routed, what=f"route of {topic} on both brokers")

            sent_by_broker: Counter[str] = Counter()
            bodies = set()
            for i in range(MESSAGES):
                body = f"m{i}"
                result = await producer.send(Message.create(topic, body))
                assert result.status is SendStatus.SEND_OK
                sent_by_broker[result.message_queue.broker_name] += 1
                bodies.add(body)
            # the producer's round robin over the route's 8 queues puts half on each broker
            assert set(sent_by_broker) == {"broker-a-1", "broker-a-2"}, sent_by_broker

            stored = await admin.read_topic(topic)
            assert sorted(m.body.decode() for m in stored) == sorted(bodies)
            per_broker = Counter[str]()
            for name in found:
                for q in range(4):
                    per_broker[name] += len(await admin.read_queue(MessageQueue(topic, name, q)))
            assert per_broker == sent_by_broker
        assert serve.stop() == 0  # brokers stopped by SIGTERM, then the nameserver: a clean exit
        # each broker has its own store directory under the serve store root
        assert (tmp_path / "store" / "broker-a-1" / "commitlog").is_dir()
        assert (tmp_path / "store" / "broker-a-2" / "commitlog").is_dir()


def test_a_broker_that_dies_stops_serve_with_exit_code_1(tmp_path: Path) -> None:
    with start_serve(tmp_path, extra_args=["--brokers", "2"], **broker_conf()) as serve:
        children = Path(f"/proc/{serve.pid}/task/{serve.pid}/children").read_text().split()
        assert len(children) == 2, children
        os.kill(int(children[0]), signal.SIGKILL)
        assert serve.wait(timeout=60) == 1
    err = serve.stderr_path.read_text()
    assert f"broker pid {children[0]} exited with -9: stopping" in err
    other = Path(f"/proc/{children[1]}/cmdline")  # the other broker was stopped (and reaped) too
    assert not other.exists() or b"broker" not in other.read_bytes()
