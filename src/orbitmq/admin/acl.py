"""ACL administration over the broker's ACL codes (50-53): what mqadmin's updateAclConfig,
deleteAclConfig, updateGlobalWhiteAddr and clusterAclConfigVersion do. Each call goes to one broker
(`broker_addr`) or every master of a cluster, and needs an admin account's credentials when the
brokers have ACL on.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from orbitmq.admin.base import AdminBase, ext_fields
from orbitmq.protocol.codes import RequestCode


class AclAdmin(AdminBase):
    async def update_acl_config(
        self,
        access_key: str,
        *,
        broker_addr: str | None = None,
        cluster: str | None = None,
        secret_key: str | None = None,
        white_remote_address: str | None = None,
        admin: bool = False,
        default_topic_perm: str | None = None,
        default_group_perm: str | None = None,
        topic_perms: Sequence[str] = (),
        group_perms: Sequence[str] = (),
    ) -> list[str]:
        """Create or update an account in plain_acl.yml; returns the brokers changed."""
        fields = ext_fields(
            accessKey=access_key,
            secretKey=secret_key,
            whiteRemoteAddress=white_remote_address,
            admin=admin,  # always sent, as the Java header's primitive boolean is
            defaultTopicPerm=default_topic_perm,
            defaultGroupPerm=default_group_perm,
            topicPerms=",".join(topic_perms) or None,
            groupPerms=",".join(group_perms) or None,
        )
        targets = await self.broker_targets(broker_addr, cluster)
        for addr in targets:
            await self.call(addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, fields)
        return targets

    async def delete_acl_config(
        self, access_key: str, *, broker_addr: str | None = None, cluster: str | None = None
    ) -> list[str]:
        targets = await self.broker_targets(broker_addr, cluster)
        for addr in targets:
            await self.call(addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": access_key})
        return targets

    async def update_global_white_addrs(
        self, addresses: Sequence[str], *, broker_addr: str | None = None, cluster: str | None = None
    ) -> list[str]:
        targets = await self.broker_targets(broker_addr, cluster)
        for addr in targets:
            await self.call(
                addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": ",".join(addresses)}
            )
        return targets

    async def acl_config_versions(
        self, *, broker_addr: str | None = None, cluster: str | None = None
    ) -> list[dict[str, object]]:
        """GET_BROKER_CLUSTER_ACL_INFO of each broker: cluster, broker name and address, data version."""
        out: list[dict[str, object]] = []
        for addr in await self.broker_targets(broker_addr, cluster):
            ext = (await self.call(addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)).ext_fields
            version = orjson.loads(ext.get("version") or "{}")
            out.append(
                {
                    "clusterName": ext.get("clusterName"),
                    "brokerName": ext.get("brokerName"),
                    "brokerAddr": ext.get("brokerAddr", addr),
                    "version": version,
                }
            )
        return out
