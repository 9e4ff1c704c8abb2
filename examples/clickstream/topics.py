"""Creates the example's topics on every master broker of the cluster (like `mqadmin updateTopic -c`)."""

from __future__ import annotations

from orbitmq.client.api import MQClientAPI
from orbitmq.protocol import java_json
from orbitmq.transport.client import RemotingClient
from orbitmq.transport.loop import run

CLICKS = "clicks"
COUNTS = "click_counts"


async def _ensure(namesrv: str, topics: dict[str, int]) -> list[str]:
    remoting = RemotingClient()
    try:
        api = MQClientAPI(remoting, namesrv.split(";"))
        info = java_json.loads(await api.get_broker_cluster_info())
        masters = [
            str(addrs.get(0) or addrs.get("0"))
            for broker in info.get("brokerAddrTable", {}).values()
            if (addrs := broker.get("brokerAddrs", {})) and (addrs.get(0) or addrs.get("0"))
        ]
        if not masters:
            raise SystemExit(
                f"no broker registered at the name server {namesrv}; is `orbitmq serve` running?"
            )
        for addr in masters:
            for topic, queues in topics.items():
                await api.create_topic(addr, topic, read_queue_nums=queues, write_queue_nums=queues)
        return masters
    finally:
        await remoting.close()


def ensure_topics(namesrv: str) -> list[str]:
    """Creates `clicks` (4 queues) and `click_counts` (2 queues); returns the broker addresses."""
    return run(_ensure(namesrv, {CLICKS: 4, COUNTS: 2}))
