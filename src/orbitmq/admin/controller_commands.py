"""`orbitmq admin` verbs for RocketMQ 5's controller, with mqadmin's names and flags: getSyncStateSet,
getBrokerEpoch, getControllerMetaData, getControllerConfig, updateControllerConfig, electMaster,
cleanBrokerMetadata. They speak to the controller (-a, `;` between several) with its request codes, as
mqadmin does: the leader is found through CONTROLLER_GET_METADATA_INFO first; only getBrokerEpoch (the
brokers' epochs) and a cluster name (-c) need the name server."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

import orjson

from orbitmq.admin.base import AdminError, ext_fields
from orbitmq.admin.registry import Report, command
from orbitmq.common.errors import BrokerError
from orbitmq.controller import codes, state
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.properties_text import decode_properties_text

if TYPE_CHECKING:
    from orbitmq.admin.api import AdminClient

# Controller response codes by name (ResponseCode.CONTROLLER_*), for the error line.
CODE_NAMES = {
    value: f"CONTROLLER_{name}"
    for name, value in vars(state).items()
    if name.isupper() and isinstance(value, int) and value >= 2000
}


def _addresses(text: str) -> list[str]:
    addrs = [a.strip() for a in text.split(";") if a.strip()]
    if not addrs:
        raise AdminError("give the controller's address: -a host:port (';' between several)")
    return addrs


async def _ask(
    admin: AdminClient, addr: str, code: int, fields: dict[str, str] | None = None, body: bytes = b""
) -> RemotingCommand:
    try:
        return await admin.call(addr, code, fields, body)
    except BrokerError as exc:
        if exc.code in CODE_NAMES:
            raise AdminError(f"{addr} answered {CODE_NAMES[exc.code]} ({exc.code}): {exc.remark}") from None
        raise


async def _leader(admin: AdminClient, addresses: str) -> str:
    """The controller leader's address, as the first controller listed reports it (mqadmin's way)."""
    first = _addresses(addresses)[0]
    meta = await _ask(admin, first, codes.CONTROLLER_GET_METADATA_INFO)
    return meta.ext_fields.get("controllerLeaderAddress") or first


async def _broker_names(admin: AdminClient, broker_name: str | None, cluster: str | None) -> list[str]:
    if broker_name:
        return [broker_name]
    if not cluster:
        raise AdminError("give a broker name (-b) or a cluster name (-c)")
    info = await admin.cluster_info()
    if cluster not in info.cluster_addr_table:
        raise AdminError(f"cluster {cluster!r} does not exist")
    return sorted(info.cluster_addr_table[cluster])


# ------------------------------------------------------------------------------- getSyncStateSet
def _sync_state_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--controllerAddress", dest="controller", required=True, help="the controller")
    p.add_argument("-b", "--brokerName", dest="broker_name", help="which broker group")
    p.add_argument("-c", "--clusterName", dest="cluster", help="every group of this cluster (needs -n)")


@command(
    "getSyncStateSet", "each broker group's master, epochs and SyncStateSet", _sync_state_args, namesrv=False
)
async def get_sync_state_set(admin: AdminClient, args: argparse.Namespace) -> Report:
    names = await _broker_names(admin, args.broker_name, args.cluster)
    leader = await _leader(admin, args.controller)
    answer = await _ask(admin, leader, codes.CONTROLLER_GET_SYNC_STATE_DATA, None, orjson.dumps(names))
    table: dict[str, Any] = orjson.loads(answer.body_bytes())["replicasInfoTable"]
    lines = []
    for name, group in table.items():
        in_sync, out = group["inSyncReplicas"], group["notInSyncReplicas"]
        lines += [
            f"#brokerName\t{name}",
            f"#MasterBrokerId\t{group['masterBrokerId']}",
            f"#MasterAddr\t{group['masterAddress']}",
            f"#MasterEpoch\t{group['masterEpoch']}",
            f"#SyncStateSetEpoch\t{group['syncStateSetEpoch']}",
            f"#SyncStateSetNums\t{len(in_sync)}",
        ]
        lines += [f"InSyncReplica:\t{_replica(r)}" for r in in_sync]
        lines += [f"NotInSyncReplica:\t{_replica(r)}" for r in out]
        lines.append("")
    missing = [n for n in names if n not in table]
    if missing:
        lines.append(f"(the controller knows no group {', '.join(missing)})")
    return Report("\n".join(lines).rstrip(), table)


def _replica(r: dict[str, Any]) -> str:
    alive = "alive" if r.get("alive") else "not alive"
    return f"brokerId={r['brokerId']} brokerAddress={r['brokerAddress']} {alive}"


# -------------------------------------------------------------------------------- getBrokerEpoch
def _epoch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", dest="broker_name", help="which broker group")
    p.add_argument("-c", "--clusterName", dest="cluster", help="every group of this cluster")


@command(
    "getBrokerEpoch", "the epochs each replica of a broker group recorded (from the brokers)", _epoch_args
)
async def get_broker_epoch(admin: AdminClient, args: argparse.Namespace) -> Report:
    names = set(await _broker_names(admin, args.broker_name, args.cluster))
    entries = [b for b in await admin.brokers() if b.broker_name in names]
    if not entries:
        raise AdminError(f"the name server knows no broker named {', '.join(sorted(names))}")
    lines, data = [], []
    for b in entries:
        cache = orjson.loads((await _ask(admin, b.address, codes.GET_BROKER_EPOCH_CACHE)).body_bytes())
        data.append({**cache, "brokerAddr": b.address})
        lines += [
            f"#clusterName\t{cache['clusterName']}",
            f"#brokerName\t{cache['brokerName']}",
            f"#brokerAddr\t{b.address}",
            f"#brokerId\t{cache['brokerId']}",
        ]
        lines += [
            f"#Epoch: epoch={e['epoch']} startOffset={e['startOffset']} endOffset={e['endOffset']}"
            for e in cache["epochList"]
        ]
        lines.append("")
    return Report("\n".join(lines).rstrip(), data)


# ------------------------------------------------------------------------- getControllerMetaData
def _controller_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-a", "--controllerAddress", dest="controller", required=True, help="controller(s), ';' between"
    )


@command(
    "getControllerMetaData", "the controller group, its leader and peers", _controller_arg, namesrv=False
)
async def get_controller_meta_data(admin: AdminClient, args: argparse.Namespace) -> Report:
    meta = (await _ask(admin, _addresses(args.controller)[0], codes.CONTROLLER_GET_METADATA_INFO)).ext_fields
    lines = [
        f"#ControllerGroup\t{meta.get('group', '')}",
        f"#ControllerLeaderId\t{meta.get('controllerLeaderId', '')}",
        f"#ControllerLeaderAddress\t{meta.get('controllerLeaderAddress', '')}",
    ]
    lines += [f"#Peer:\t{peer}" for peer in meta.get("peers", "").split(";") if peer]
    return Report("\n".join(lines), dict(meta))


@command("getControllerConfig", "each controller's configuration", _controller_arg, namesrv=False)
async def get_controller_config(admin: AdminClient, args: argparse.Namespace) -> Report:
    configs = {}
    lines = []
    for addr in _addresses(args.controller):
        answer = await _ask(admin, addr, codes.GET_CONTROLLER_CONFIG)
        configs[addr] = decode_properties_text(answer.body_bytes().decode("utf-8"))
        lines.append(f"============{addr}============")
        lines += [f"{key:<50}=  {value}" for key, value in sorted(configs[addr].items())]
    return Report("\n".join(lines), configs)


def _update_config_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p)
    p.add_argument("-k", "--key", required=True, help="config key")
    p.add_argument("-v", "--value", required=True, help="config value")


@command("updateControllerConfig", "change a key on each controller", _update_config_args, namesrv=False)
async def update_controller_config(admin: AdminClient, args: argparse.Namespace) -> Report:
    key, value = args.key.strip(), args.value.strip()
    if not key or any(c in key for c in "=:\n"):
        raise AdminError(f"not a config key: {key!r}")
    if "\n" in value:
        raise AdminError("a config value is one line")
    body = f"{key}={value}\n".encode()
    addrs = _addresses(args.controller)
    for addr in addrs:
        await _ask(admin, addr, codes.UPDATE_CONTROLLER_CONFIG, None, body)
    return Report(
        f"update controller config success!{addrs}\n{key} : {value}", {"controllers": addrs, key: value}
    )


# ---------------------------------------------------------------------------------- electMaster
def _elect_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p)
    p.add_argument("-b", "--brokerId", dest="broker_id", type=int, required=True, help="the new master's id")
    p.add_argument("-bn", "--brokerName", dest="broker_name", required=True, help="the broker group")
    p.add_argument("-c", "--clusterName", dest="cluster", required=True, help="its cluster")


@command("electMaster", "make a replica of the SyncStateSet the master", _elect_args, namesrv=False)
async def elect_master(admin: AdminClient, args: argparse.Namespace) -> Report:
    leader = await _leader(admin, args.controller)
    fields = ext_fields(
        clusterName=args.cluster,
        brokerName=args.broker_name,
        brokerId=args.broker_id,
        designateElect=True,
        invokeTime=int(time.time() * 1000),
    )
    f = (await _ask(admin, leader, codes.CONTROLLER_ELECT_MASTER, fields)).ext_fields
    lines = [
        f"#ClusterName\t{args.cluster}",
        f"#BrokerName\t{args.broker_name}",
        f"#BrokerMasterAddr\t{f.get('masterAddress', '')}",
        f"#MasterEpoch\t{f.get('masterEpoch', '')}",
        f"#SyncStateSetEpoch\t{f.get('syncStateSetEpoch', '')}",
    ]
    return Report("\n".join(lines), dict(f))


# -------------------------------------------------------------------------- cleanBrokerMetadata
def _clean_args(p: argparse.ArgumentParser) -> None:
    _controller_arg(p)
    p.add_argument(
        "-b", "--brokerControllerIdsToClean", dest="ids", help="ids to forget, e.g. 1;2;3 (default all)"
    )
    p.add_argument("-bn", "--brokerName", dest="broker_name", required=True, help="the broker group")
    p.add_argument("-c", "--clusterName", dest="cluster", help="its cluster")
    p.add_argument(
        "-l", "--cleanLivingBroker", dest="living", action="store_true", help="also living brokers"
    )


@command(
    "cleanBrokerMetadata",
    "forget a broker group, or some ids of it, on the controller",
    _clean_args,
    namesrv=False,
)
async def clean_broker_metadata(admin: AdminClient, args: argparse.Namespace) -> Report:
    ids = [i.strip() for i in (args.ids or "").split(";") if i.strip()]
    bad = [i for i in ids if not i.isdigit()]
    if bad:
        raise AdminError(f"-b takes broker ids like 1;2;3, not {';'.join(bad)}")
    leader = await _leader(admin, args.controller)
    fields = ext_fields(
        clusterName=args.cluster,
        brokerName=args.broker_name,
        brokerControllerIdsToClean=";".join(ids) or None,
        isCleanLivingBroker=args.living,
        invokeTime=int(time.time() * 1000),
    )
    await _ask(admin, leader, codes.CLEAN_BROKER_DATA, fields)
    text = f"clear broker {args.broker_name} metadata from controller success!"
    return Report(text, {"brokerName": args.broker_name, "ids": ids or "all"})
