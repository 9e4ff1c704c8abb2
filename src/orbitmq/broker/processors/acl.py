"""ACL: the request hook that checks every request (aclEnable=true) and the ACL admin requests.

The rules live in acl/; this module puts them in front of every processor and answers codes 50-54,
which change plain_acl.yml or read it and need an admin account (acl/permissions.py).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from orbitmq.acl import AclError, PlainAccessValidator
from orbitmq.acl.refusals import RefusalLog
from orbitmq.broker.processors.base import BadRequest, Fields, guarded, success
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.java_values import parse_boolean
from orbitmq.transport.connection import Connection

if TYPE_CHECKING:
    from orbitmq.broker.context import BrokerContext
    from orbitmq.transport.server import RemotingServer

log = logging.getLogger("orbitmq.broker")

ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"

# CreateAccessConfigRequestHeader's fields.
_ACCOUNT_FIELDS = (
    "accessKey",
    "secretKey",
    "whiteRemoteAddress",
    "admin",
    "defaultTopicPerm",
    "defaultGroupPerm",
    "topicPerms",
    "groupPerms",
)


def refusal(exc: AclError) -> RemotingCommand:
    """The hook's answer: NO_PERMISSION (16) with RocketMQ's AclException text as remark ("org.apache.
    rocketmq.acl.common.AclException: No acl config for xyz"). RocketMQ 4.9.8 answers SYSTEM_ERROR (its
    hook throws); Java clients treat both as a broker error (both are in the producer's retry codes), and
    NO_PERMISSION says what happened.
    """
    return RemotingCommand.response(ResponseCode.NO_PERMISSION, f"{ACL_EXCEPTION}: {exc}")


def install_hook(server: RemotingServer, validator: PlainAccessValidator) -> None:
    refusals = RefusalLog(log)

    def check(conn: Connection, request: RemotingCommand) -> RemotingCommand | None:
        try:
            validator.check(request, conn.remote_address)
        except AclError as exc:
            refusals.refused(request.code, conn.remote_address, exc)
            return refusal(exc)
        return None

    server.set_request_hook(check)


def register(server: RemotingServer, app: BrokerContext) -> None:
    """UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53)
    change plain_acl.yml and write it back; GET_BROKER_CLUSTER_ACL_INFO (52) answers the file's data
    version; GET_BROKER_CLUSTER_ACL_CONFIG (54, 4.9.7; removed in 4.9.8) the accounts. Code 53's
    `aclFileFullPath` may only name the broker's own file: 4.9.8 writes wherever the client says.
    """

    def validator() -> PlainAccessValidator:
        if app.acl is None:
            raise BadRequest(ResponseCode.SYSTEM_ERROR, "ACL is not enabled on this broker (aclEnable=false)")
        return app.acl

    async def update_account(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        acl = validator()
        ext = request.ext_fields
        Fields(ext).req_str("accessKey")
        fields: dict[str, object] = {k: ext[k] for k in _ACCOUNT_FIELDS if ext.get(k) is not None}
        if "admin" in fields:
            fields["admin"] = parse_boolean(str(fields["admin"]))
        try:
            acl.update_account(fields)
        except (AclError, OSError) as exc:
            raise BadRequest(ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, str(exc)) from None
        return success()

    async def delete_account(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        acl = validator()
        access_key = Fields(request.ext_fields).req_str("accessKey")
        try:
            deleted = acl.delete_account(access_key)
        except OSError as exc:
            raise BadRequest(ResponseCode.DELETE_ACL_CONFIG_FAILED, str(exc)) from None
        if not deleted:
            raise BadRequest(
                ResponseCode.DELETE_ACL_CONFIG_FAILED,
                f"The accesskey[{access_key}] corresponding to accessConfig has been deleted failed.",
            )
        return success()

    async def update_global_white(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        acl = validator()
        f = Fields(request.ext_fields)
        addrs = f.opt_str("globalWhiteAddrs") or ""
        target = f.opt_str("aclFileFullPath")
        if target and Path(target).resolve() != acl.path.resolve():
            raise BadRequest(
                ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
                f"aclFileFullPath {target!r} is not this broker's ACL file",
            )
        try:
            acl.update_global_white([a.strip() for a in addrs.split(",") if a.strip()])
        except (AclError, OSError) as exc:
            raise BadRequest(ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, str(exc)) from None
        return success()

    async def acl_info(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        acl = validator()
        acl.maybe_reload()
        version = acl.config.version_json()
        return success(
            {
                "version": version,
                "allAclFileVersion": orjson.dumps({str(acl.path): orjson.loads(version)}).decode(),
                "brokerName": app.config.broker_name,
                "brokerAddr": app.broker_addr,
                "clusterName": app.config.broker_cluster_name,
            }
        )

    async def acl_config(conn: Connection, request: RemotingCommand) -> RemotingCommand:
        acl = validator()
        acl.maybe_reload()
        config = acl.config
        body = {
            "globalWhiteAddrs": list(config.global_white_addresses),
            "plainAccessConfigs": [account.to_obj() for account in config.accounts.values()],
        }
        return success(body=orjson.dumps(body))

    for code, handler in (
        (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, update_account),
        (RequestCode.DELETE_ACL_CONFIG, delete_account),
        (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, update_global_white),
        (RequestCode.GET_BROKER_CLUSTER_ACL_INFO, acl_info),
        (RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, acl_config),
    ):
        server.register(code, guarded(handler), limit=16)
