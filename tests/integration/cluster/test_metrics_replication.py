"""A master's metrics show its slave: `orbitmq_replication_slaves` and `orbitmq_replication_lag_bytes`
(real master + slave processes, metricsPort=0 from broker.conf)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from orbitmq.admin.api import AdminClient
from orbitmq.testing.metrics import listening_url, scrape, value
from orbitmq.testing.process import ServerProcess

from .conftest import BROKER_CONF, cluster


def wait_for(check_url: str, name: str, want: float, timeout: float = 20.0) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(check_url)
        if value(samples, name) == want:
            return {n: v for (n, _), v in samples.items()}
        assert time.monotonic() < deadline, f"{name} never reached {want}: {value(samples, name)}"
        time.sleep(0.2)


def test_master_reports_its_slave_and_replication_lag(tmp_path: Path) -> None:
    conf = {**BROKER_CONF, "metricsPort": 0}
    with cluster(tmp_path, groups=1, slaves=1, namesrvs=1, broker_conf=conf) as c:
        master = c.master("broker-a").process
        assert isinstance(master, ServerProcess)
        url = listening_url(master)
        wait_for(url, "orbitmq_replication_slaves", 1)

        async def send() -> None:
            async with AdminClient(c.namesrv_addr) as admin:
                await admin.update_topic(
                    "ReplT", cluster=c.cluster_name, read_queue_nums=1, write_queue_nums=1
                )
                for i in range(20):
                    await admin.send_message("ReplT", b"r%d" % i)

        asyncio.run(send())
        samples = wait_for(url, "orbitmq_replication_lag_bytes", 0)
        assert samples["orbitmq_commitlog_bytes"] > 0  # data was written and the slave acknowledged it
        assert samples["orbitmq_replication_slaves"] == 1
