"""`orbitmq admin` ACL subcommands with mqadmin's names and flags: updateAclConfig, deleteAclConfig,
updateGlobalWhiteAddr, clusterAclConfigVersion."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from orbitmq.admin.registry import Report, broker_or_cluster, command, parse_bool
from orbitmq.admin.table import format_table

if TYPE_CHECKING:
    from orbitmq.admin.api import AdminClient


def _split(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def _update_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p)
    p.add_argument(
        "-a", "--accessKey", dest="access_key_value", required=True, help="the account's accessKey"
    )
    p.add_argument("-s", "--secretKey", dest="secret_key_value", help="its secretKey")
    p.add_argument("-w", "--whiteRemoteAddress", dest="white", help="white address pattern of the account")
    p.add_argument("-i", "--defaultTopicPerm", dest="default_topic_perm", help="PUB, SUB, PUB|SUB or DENY")
    p.add_argument("-u", "--defaultGroupPerm", dest="default_group_perm", help="PUB, SUB, PUB|SUB or DENY")
    p.add_argument("-t", "--topicPerms", dest="topic_perms", help="topicA=DENY,topicD=SUB")
    p.add_argument("-g", "--groupPerms", dest="group_perms", help="groupA=DENY,groupD=SUB")
    p.add_argument("-m", "--admin", dest="admin", type=parse_bool, default=False, help="admin flag")


@command("updateAclConfig", "create or update an ACL account on a broker (-b) or cluster (-c)", _update_args)
async def update_acl_config(admin: AdminClient, args: argparse.Namespace) -> Report:
    targets = await admin.update_acl_config(
        args.access_key_value,
        broker_addr=args.broker_addr,
        cluster=args.cluster,
        secret_key=args.secret_key_value,
        white_remote_address=args.white,
        admin=args.admin,
        default_topic_perm=args.default_topic_perm,
        default_group_perm=args.default_group_perm,
        topic_perms=_split(args.topic_perms),
        group_perms=_split(args.group_perms),
    )
    text = "\n".join(f"create or update plain access config to {addr} success." for addr in targets)
    return Report(text, {"accessKey": args.access_key_value, "brokers": targets})


def _delete_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p)
    p.add_argument("-a", "--accessKey", dest="access_key_value", required=True, help="the account to delete")


@command("deleteAclConfig", "delete an ACL account from a broker (-b) or cluster (-c)", _delete_args)
async def delete_acl_config(admin: AdminClient, args: argparse.Namespace) -> Report:
    targets = await admin.delete_acl_config(
        args.access_key_value, broker_addr=args.broker_addr, cluster=args.cluster
    )
    text = "\n".join(f"delete plain access config account from {addr} success." for addr in targets)
    return Report(text, {"accessKey": args.access_key_value, "brokers": targets})


def _white_args(p: argparse.ArgumentParser) -> None:
    broker_or_cluster(p)
    p.add_argument(
        "-g", "--globalWhiteRemoteAddresses", dest="addresses", required=True, help="10.10.103.*,192.168.0.*"
    )


@command(
    "updateGlobalWhiteAddr", "set the global white addresses of a broker (-b) or cluster (-c)", _white_args
)
async def update_global_white_addr(admin: AdminClient, args: argparse.Namespace) -> Report:
    addresses = _split(args.addresses)
    targets = await admin.update_global_white_addrs(
        addresses, broker_addr=args.broker_addr, cluster=args.cluster
    )
    text = "\n".join(f"update global white remote addresses to {addr} success." for addr in targets)
    return Report(text, {"globalWhiteRemoteAddresses": addresses, "brokers": targets})


@command(
    "clusterAclConfigVersion",
    "the ACL file version of each broker (-b) or cluster master (-c)",
    broker_or_cluster,
)
async def cluster_acl_config_version(admin: AdminClient, args: argparse.Namespace) -> Report:
    rows = await admin.acl_config_versions(broker_addr=args.broker_addr, cluster=args.cluster)
    table = []
    for row in rows:
        version = row["version"] if isinstance(row["version"], dict) else {}
        stamp = version.get("timestamp", 0)
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(stamp) / 1000)) if stamp else "-"
        table.append(
            (row["clusterName"], row["brokerName"], row["brokerAddr"], version.get("counter", 0), when)
        )
    text = format_table(
        ["#Cluster Name", "#Broker Name", "#Broker Addr", "#AclConfigVersionNum", "#AclLastUpdateTime"], table
    )
    return Report(text, rows)
