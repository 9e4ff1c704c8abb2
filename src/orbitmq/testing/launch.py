"""start_namesrv / start_broker / start_serve: config files from keyword arguments, then real processes.

Keyword arguments are RocketMQ property names written verbatim into a Java properties file; every
listener defaults to port 0 and every path to the work directory, so tests never collide with each
other or touch the home directory. Nothing here knows remoting or the servers' internals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orbitmq.testing.process import DEFAULT_START_TIMEOUT, ServerProcess, start_process


def property_text(value: Any) -> str:
    """A Python value as Java reads it in a properties file (True -> "true", lists -> ";"-joined)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return ";".join(property_text(v) for v in value)
    return str(value)


def write_properties(path: Path, props: Mapping[str, Any]) -> Path:
    """Write a Java properties file (key=value lines); returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"{key}={property_text(value)}\n" for key, value in props.items())
    path.write_text(text, encoding="utf-8")
    return path


def start_namesrv(
    workdir: Path,
    *,
    name: str = "namesrv",
    timeout: float = DEFAULT_START_TIMEOUT,
    extra_args: Sequence[str] = (),
    **config: Any,
) -> ServerProcess:
    """Start `orbitmq namesrv -c <workdir>/<name>.conf`; its files live in `<workdir>/<name>/`.

    Useful test settings (ms): scanNotActiveBrokerInterval, brokerChannelExpiredTime,
    serverChannelMaxIdleTimeSeconds (s).
    """
    workdir = Path(workdir)
    home = workdir / name
    props: dict[str, Any] = {
        "listenPort": 0,
        "kvConfigPath": home / "kvConfig.json",
        "configStorePath": home / "namesrv.properties",
    }
    props.update(config)
    conf = write_properties(workdir / f"{name}.conf", props)
    return start_process(
        "namesrv",
        ["-c", str(conf), *extra_args],
        workdir,
        name=name,
        expect=("namesrv",),
        primary="namesrv",
        timeout=timeout,
    )


# A test broker's store files: the store backs every segment's blocks before mapping it (a full disk
# must refuse, not SIGBUS), so RocketMQ's defaults (1 GiB commit-log segments, one made ahead, and 420 MB
# index files) would take 2.4 GB of disk per test broker. A test's own settings win.
TEST_STORE_SIZES: dict[str, int] = {
    "mappedFileSizeCommitLog": 64 << 20,
    "mappedFileSizeConsumeQueue": 20 * 30_000,
    "maxHashSlotNum": 50_000,
    "maxIndexNum": 200_000,
}


def broker_properties(
    workdir: Path,
    namesrv_addr: str | Sequence[str] | None,
    *,
    broker_name: str = "broker-a",
    broker_id: int = 0,
    role: str = "ASYNC_MASTER",
    **broker_conf: Any,
) -> dict[str, Any]:
    """The broker.conf properties start_broker writes (exposed for tests that tweak and restart)."""
    props: dict[str, Any] = {
        "brokerClusterName": "DefaultCluster",
        "brokerName": broker_name,
        "brokerId": broker_id,
        "brokerRole": "SLAVE" if broker_id != 0 and role == "ASYNC_MASTER" else role,
        "listenPort": 0,
        "storePathRootDir": Path(workdir) / f"store-{broker_name}-{broker_id}",
        "flushDiskType": "ASYNC_FLUSH",
        **TEST_STORE_SIZES,
    }
    if namesrv_addr:
        props["namesrvAddr"] = namesrv_addr if isinstance(namesrv_addr, str) else ";".join(namesrv_addr)
    props.update(broker_conf)
    return props


def start_broker(
    workdir: Path,
    namesrv_addr: str | Sequence[str] | None,
    *,
    broker_name: str = "broker-a",
    broker_id: int = 0,
    role: str = "ASYNC_MASTER",
    timeout: float = DEFAULT_START_TIMEOUT,
    expect: Sequence[str] = ("broker",),
    **broker_conf: Any,
) -> ServerProcess:
    """Start `orbitmq broker -c <workdir>/broker-<name>-<id>.conf` and wait for its listeners.

    Waits for the `broker NAME listening on` line; `.ha_addr` waits (10 s) for the HA line on first
    use, so brokers that print it later, or tests that never need it, do not pay for it. Pass
    expect=("broker", "ha") to require both before returning.

    A non-zero broker_id with the default role becomes brokerRole=SLAVE. The store lives in
    `<workdir>/store-<name>-<id>` unless storePathRootDir is given.
    """
    workdir = Path(workdir)
    props = broker_properties(
        workdir, namesrv_addr, broker_name=broker_name, broker_id=broker_id, role=role, **broker_conf
    )
    name = f"broker-{broker_name}-{broker_id}"
    conf = write_properties(workdir / f"{name}.conf", props)
    return start_process(
        "broker", ["-c", str(conf)], workdir, name=name, expect=expect, primary="broker", timeout=timeout
    )


def start_serve(
    workdir: Path,
    *,
    timeout: float = DEFAULT_START_TIMEOUT,
    expect: Sequence[str] = ("namesrv", "broker"),
    extra_args: Sequence[str] = (),
    **broker_conf: Any,
) -> ServerProcess:
    """Start `orbitmq serve -c <workdir>/serve.conf --namesrv-port 0` (embedded namesrv + broker).

    The conf holds broker properties (listenPort=0, storePathRootDir=<workdir>/store by default).
    `.address` is the namesrv's; `.broker_addr` the broker's.
    """
    workdir = Path(workdir)
    props: dict[str, Any] = {
        "brokerClusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "brokerId": 0,
        "brokerRole": "ASYNC_MASTER",
        "listenPort": 0,
        "storePathRootDir": workdir / "store",
        "flushDiskType": "ASYNC_FLUSH",
        **TEST_STORE_SIZES,
    }
    props.update(broker_conf)
    conf = write_properties(workdir / "serve.conf", props)
    return start_process(
        "serve",
        ["-c", str(conf), "--namesrv-port", "0", *extra_args],
        workdir,
        name="serve",
        expect=expect,
        primary="namesrv",
        timeout=timeout,
    )
