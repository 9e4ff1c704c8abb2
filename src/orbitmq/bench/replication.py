"""W6: replication. A master with one slave, SYNC_MASTER and then ASYNC_MASTER in the same run: sync and
pipelined sends, with the replication lag sampled from both commit-log max offsets meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orbitmq.bench import workloads as wl
from orbitmq.bench.driver import DriverUnavailable, ServerHandle, make_body
from orbitmq.bench.lag import LagSample, LagSummary, commit_log_max_offset, summarize_lag
from orbitmq.bench.progress import Progress
from orbitmq.bench.raw_driver import RawDriver
from orbitmq.bench.result import Measurement
from orbitmq.common.errors import BrokerError, OrbitError
from orbitmq.protocol import java_json
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.client import RemotingClient

ROLES = ("SYNC_MASTER", "ASYNC_MASTER")
SAMPLE_INTERVAL = 0.1
# Small-ish segments keep the temp dir small; the slave reports its offset every second while idle.
CLUSTER_BROKER_CONF: dict[str, Any] = {
    "mappedFileSizeCommitLog": 64 * 1024 * 1024,
    "haSendHeartbeatInterval": 1000,
}
NOT_CONFIRMED = {
    int(ResponseCode.FLUSH_SLAVE_TIMEOUT): "FLUSH_SLAVE_TIMEOUT",
    int(ResponseCode.SLAVE_NOT_AVAILABLE): "SLAVE_NOT_AVAILABLE",
    int(ResponseCode.FLUSH_DISK_TIMEOUT): "FLUSH_DISK_TIMEOUT",
}


@dataclass(frozen=True, slots=True)
class ReplicaPair:
    broker_name: str
    master: str
    slave: str | None


def pick_group(cluster_info: dict[str, Any]) -> ReplicaPair | None:
    """From a GET_BROKER_CLUSTER_INFO body: the first broker group (by name) that has a master and a
    slave, else the first that has a master (slave None), else None."""
    found: list[ReplicaPair] = []
    for name, data in sorted((cluster_info.get("brokerAddrTable") or {}).items()):
        addrs = {int(str(k)): str(v) for k, v in (data.get("brokerAddrs") or {}).items()}
        if 0 not in addrs:
            continue
        slaves = sorted(k for k in addrs if k > 0)
        found.append(ReplicaPair(str(name), addrs[0], addrs[slaves[0]] if slaves else None))
    with_slave = [p for p in found if p.slave is not None]
    candidates = with_slave or found
    return candidates[0] if candidates else None


class CountingRawDriver(RawDriver):
    """The raw driver, counting answers that mean "stored on the master, not confirmed by the slave"."""

    def __init__(self, namesrv: str, server: ServerHandle | None = None) -> None:
        super().__init__(namesrv, server)
        self.not_confirmed: Counter[int] = Counter()

    async def _invoke(
        self, addr: str, request: RemotingCommand, ok: frozenset[int] = frozenset({0})
    ) -> RemotingCommand:
        response = await super()._invoke(addr, request, ok)
        if response.code != ResponseCode.SUCCESS:
            self.not_confirmed[response.code] += 1
        return response

    def describe_not_confirmed(self) -> str:
        parts = [
            f"{n:,} {NOT_CONFIRMED.get(code, str(code))}" for code, n in sorted(self.not_confirmed.items())
        ]
        return ", ".join(parts)


async def _ask(client: RemotingClient, addr: str, code: int) -> dict[str, Any]:
    """The JSON body of a successful answer to a request without a header; BrokerError otherwise."""
    response = await client.invoke(addr, RemotingCommand.request(code), 3.0)
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError(response.code, response.remark, address=addr)
    info: dict[str, Any] = java_json.loads(response.body_bytes())
    return info


async def runtime_info(client: RemotingClient, addr: str) -> dict[str, Any]:
    table = (await _ask(client, addr, RequestCode.GET_BROKER_RUNTIME_INFO)).get("table")
    return dict(table) if isinstance(table, dict) else {}


async def max_offset(client: RemotingClient, addr: str) -> int:
    return commit_log_max_offset(await runtime_info(client, addr))


class LagSampler:
    """Reads the master's and the slave's commit-log max offsets every `interval` s until stopped."""

    def __init__(self, client: RemotingClient, pair: ReplicaPair, interval: float = SAMPLE_INTERVAL) -> None:
        self.client = client
        self.pair = pair
        self.interval = interval
        self.samples: list[LagSample] = []
        self.errors = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self, slave: str) -> None:
        start = time.monotonic()
        while True:
            began = time.monotonic()
            try:
                master_offset, slave_offset = await asyncio.gather(
                    max_offset(self.client, self.pair.master), max_offset(self.client, slave)
                )
            except (OSError, TimeoutError, OrbitError, ValueError):
                self.errors += 1
            else:
                self.samples.append(LagSample(began - start, master_offset, slave_offset))
            await asyncio.sleep(max(0.0, self.interval - (time.monotonic() - began)))

    def start(self) -> None:
        if self.pair.slave is not None:
            self._task = asyncio.ensure_future(self._run(self.pair.slave))

    async def stop(self) -> LagSummary:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return summarize_lag(self.samples)


async def wait_replicating(
    driver: CountingRawDriver, client: RemotingClient, pair: ReplicaPair, timeout: float = 30.0
) -> None:
    """Until a send is answered SEND_OK (a SYNC_MASTER says SLAVE_NOT_AVAILABLE until its slave's HA
    link is up) and the slave's max offset has reached the master's: only then does a measured window
    show replication rather than the slave's first catch-up."""
    if pair.slave is None:
        return
    topic = wl.new_topic("W6probe")
    await driver.create_topic(topic, 1)
    body = make_body(64)
    deadline = time.monotonic() + timeout
    while True:
        before = sum(driver.not_confirmed.values())
        await driver.send(topic, body)
        if sum(driver.not_confirmed.values()) == before:
            master, slave = await asyncio.gather(
                max_offset(client, pair.master), max_offset(client, pair.slave)
            )
            if slave >= master:
                break
        if time.monotonic() > deadline:
            raise DriverUnavailable(
                f"the slave of {pair.broker_name} did not catch up within {timeout:.0f} s"
            )
        await asyncio.sleep(0.2)
    driver.not_confirmed.clear()


async def catch_up_ms(client: RemotingClient, pair: ReplicaPair, timeout: float = 10.0) -> float | None:
    """After the load stopped: ms until the slave's max offset reaches the master's (None on timeout)."""
    if pair.slave is None:
        return None
    start = time.perf_counter()
    target = await max_offset(client, pair.master)
    while time.perf_counter() - start < timeout:
        if await max_offset(client, pair.slave) >= target:
            return (time.perf_counter() - start) * 1000.0
        await asyncio.sleep(0.005)
    return None


def _add_note(m: Measurement, text: str) -> None:
    if text:
        m.note = (m.note + "; " if m.note else "") + text


async def measure_role(
    driver: CountingRawDriver,
    *,
    client: RemotingClient,
    pair: ReplicaPair,
    role: str,
    cfg: wl.WorkloadConfig,
    senders: int,
    progress: Progress,
) -> list[Measurement]:
    """The two W6 cases against one master/slave pair: sync send and pipelined send, lag sampled."""
    await wait_replicating(driver, client, pair)
    results: list[Measurement] = []
    for label in ("sync", "pipelined"):
        sampler = LagSampler(client, pair)
        driver.not_confirmed.clear()
        sampler.start()
        try:
            if label == "sync":
                m = await wl.sync_send(driver, cfg, progress, senders, "W6")
            else:
                m = await wl.pipelined_send(driver, cfg, progress)
        finally:
            summary = await sampler.stop()
        m.workload = "W6"  # pipelined_send labels its figures W2
        m.extra["server_processes"] = float(len(driver.server_pids))
        m.case = f"{role} {m.case}"
        if pair.slave is None:
            _add_note(m, f"no slave registered for {pair.broker_name}: no lag")
        else:
            m.extra.update(summary.extra())
            _add_note(m, summary.describe())
            if sampler.errors:
                _add_note(m, f"{sampler.errors} lag samples failed")
            after = await catch_up_ms(client, pair)
            if after is not None:
                m.extra["catch_up_ms"] = after
                _add_note(m, f"slave caught up {after:,.1f} ms after the load stopped")
        if driver.not_confirmed:
            _add_note(m, f"answers stored but not confirmed: {driver.describe_not_confirmed()}")
        results.append(m)
    return results


async def _cluster_info(client: RemotingClient, namesrv: str) -> dict[str, Any]:
    return await _ask(client, namesrv, RequestCode.GET_BROKER_CLUSTER_INFO)


async def measure_cluster(
    namesrv: str,
    server: ServerHandle | None,
    *,
    role: str | None,
    cfg: wl.WorkloadConfig,
    senders: int,
    progress: Progress,
) -> list[Measurement]:
    """Both cases against the cluster at `namesrv` (its master's role is read when `role` is None)."""
    client = RemotingClient(connect_timeout=3.0, name="bench-lag")
    driver = CountingRawDriver(namesrv, server)
    try:
        await driver.open()
        pair = pick_group(await _cluster_info(client, namesrv))
        if pair is None:
            raise DriverUnavailable(f"no broker master registered with {namesrv}")
        if role is None:
            role = str((await runtime_info(client, pair.master)).get("brokerRole", "master"))
        return await measure_role(
            driver, client=client, pair=pair, role=role, cfg=cfg, senders=senders, progress=progress
        )
    finally:
        await driver.close()
        await client.close()


def start_cluster(workdir: Path, role: str) -> tuple[Any, ServerHandle]:
    """A Cluster (1 nameserver, 1 group, 1 slave) started in `workdir`, and a handle stopping it."""
    from orbitmq.testing.cluster import Cluster

    cluster = Cluster(
        workdir, groups=1, slaves=1, namesrvs=1, master_role=role, broker_conf=CLUSTER_BROKER_CONF
    )
    cluster.start()
    pids = [node.pid for node in [*cluster.nameservers, *cluster.brokers]]
    handle = ServerHandle(
        "orbitmq", cluster.namesrv_addr, None, workdir, extra_pids=pids, stopper=cluster.stop
    )
    return cluster, handle


async def run(
    args: argparse.Namespace, cfg: wl.WorkloadConfig, workdir: Path, progress: Progress
) -> list[Measurement]:
    """W6: with `--serve` both roles on clusters of their own, else the cluster at `-n`.

    Sync send with `--replication-senders` senders (msgs/s, round trip p50/p99, as W1) and pipelined send
    (as W2), while the master's and the slave's "commitLogMaxOffset" are sampled every ~100 ms through
    GET_BROKER_RUNTIME_INFO. With `--serve` each role gets its own `orbitmq.testing.cluster.Cluster`
    (1 nameserver, 1 broker group, 1 slave) and the server CPU covers all three; with `-n` the cluster is
    measured in its master's own role, without server CPU. The raw-protocol driver also counts the sends
    a master answered FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE: stored, not confirmed by the slave.
    """
    senders = int(args.replication_senders)
    if not args.serve:
        namesrv = args.namesrv or "127.0.0.1:9876"
        return await measure_cluster(namesrv, None, role=None, cfg=cfg, senders=senders, progress=progress)
    results: list[Measurement] = []
    for role in ROLES:
        progress.begin(f"W6 starting a {role} cluster", 60.0)
        cluster, handle = await asyncio.to_thread(start_cluster, workdir / role, role)
        try:
            await cluster.wait_registered(timeout=30.0)
            results += await measure_cluster(
                handle.address, handle, role=role, cfg=cfg, senders=senders, progress=progress
            )
        finally:
            await asyncio.to_thread(handle.stop)
    return results
