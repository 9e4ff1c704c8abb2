"""AdminClient: mqadmin's operations as asyncio calls against the name servers and brokers.

Topic, broker and subscription-group operations live here; messages in `messages`, ACL in `acl`,
name-server queries and broker resolution in `base`. The admin-only RPCs follow the fact sheet's
headers (3.5) and bodies (4.7, 4.10); no argument parsing or output formatting here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orbitmq.admin.acl import AclAdmin
from orbitmq.admin.base import LONG_MAX, AdminError, ext_fields
from orbitmq.admin.broker_stats import BrokerStatsAdmin
from orbitmq.admin.messages import MessageAdmin
from orbitmq.admin.views import (
    ConsumerProgress,
    QueueProgress,
    QueueStatus,
    ResetOffsetEntry,
)
from orbitmq.common.errors import BrokerError
from orbitmq.protocol.bodies import (
    ConsumerConnection,
    ConsumeStats,
    GroupList,
    KVTable,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicStatsTable,
    decode_properties_text,
    encode_properties_text,
)
from orbitmq.protocol.codes import RequestCode, ResponseCode

ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"  # NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG


class AdminClient(AclAdmin, BrokerStatsAdmin, MessageAdmin):
    """mqadmin's operations; one client per name-server list, used as an async context manager:

    async with AdminClient("127.0.0.1:9876") as admin:
        await admin.update_topic("TopicA", cluster="DefaultCluster", write_queue_nums=4)
        print(await admin.consumer_progress("GroupA"))
    """

    # ---- topics -----------------------------------------------------------------------------

    async def update_topic(
        self,
        topic: str,
        *,
        broker_addr: str | None = None,
        cluster: str | None = None,
        read_queue_nums: int = 8,
        write_queue_nums: int = 8,
        perm: int = 6,
        order: bool = False,
    ) -> list[str]:
        """Create or update `topic` on one broker or every master of a cluster; returns the addresses."""
        targets = await self.broker_targets(broker_addr, cluster)
        for addr in targets:
            await self.api.create_topic(
                addr,
                topic,
                read_queue_nums=read_queue_nums,
                write_queue_nums=write_queue_nums,
                perm=perm,
                order=order,
            )
        if order:
            await self._update_order_conf(topic, targets, write_queue_nums, whole_cluster=not broker_addr)
        return targets

    async def _update_order_conf(
        self, topic: str, targets: list[str], write_queue_nums: int, *, whole_cluster: bool
    ) -> None:
        """An ordered topic's "brokerName:queueNums;..." in the name servers' ORDER_TOPIC_CONFIG
        namespace (what the route's orderTopicConf is made from): the cluster's brokers replace it,
        one broker updates its own entry."""
        names = {b.address: b.broker_name for b in await self.brokers()}
        entries: dict[str, str] = {}
        if not whole_cluster:
            current = await self.get_kv_config(ORDER_TOPIC_CONFIG, topic) or ""
            entries = dict(part.split(":", 1) for part in current.split(";") if ":" in part)
        for addr in targets:
            entries[names.get(addr, addr)] = str(write_queue_nums)
        conf = ";".join(f"{name}:{nums}" for name, nums in sorted(entries.items()))
        await self.put_kv_config(ORDER_TOPIC_CONFIG, topic, conf)

    async def delete_topic(self, topic: str, cluster: str) -> list[str]:
        """DELETE_TOPIC_IN_BROKER on every master of the cluster, then remove the route everywhere."""
        targets = await self.broker_targets(None, cluster)
        for addr in targets:
            await self.call(addr, RequestCode.DELETE_TOPIC_IN_BROKER, ext_fields(topic=topic))
        await self.delete_topic_in_namesrv(topic, cluster)
        return targets

    async def topic_status(self, topic: str) -> list[QueueStatus]:
        rows = []
        for name, addr in (await self.topic_masters(topic)).items():
            resp = await self.call(addr, RequestCode.GET_TOPIC_STATS_INFO, ext_fields(topic=topic))
            table = TopicStatsTable.from_json(resp.body_bytes())
            for mq, off in table.offset_table.items():
                rows.append(
                    QueueStatus(name, mq.queue_id, off.min_offset, off.max_offset, off.last_update_timestamp)
                )
        return sorted(rows, key=lambda r: (r.broker_name, r.queue_id))

    # ---- brokers ----------------------------------------------------------------------------

    async def broker_runtime_info(self, addr: str) -> dict[str, str]:
        resp = await self.call(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return dict(KVTable.from_json(resp.body_bytes()).table) if resp.body_length else {}

    async def topic_consumer_groups(self, addr: str, topic: str) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO: the groups that consume `topic` on the broker at `addr`."""
        resp = await self.call(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic})
        return list(GroupList.from_json(resp.body_bytes()).group_list)

    async def broker_config(self, addr: str) -> dict[str, str]:
        resp = await self.call(addr, RequestCode.GET_BROKER_CONFIG)
        return decode_properties_text(resp.body_bytes())

    async def update_broker_config(self, addr: str, props: Mapping[str, str]) -> None:
        await self.call(addr, RequestCode.UPDATE_BROKER_CONFIG, body=encode_properties_text(props))

    # ---- subscription groups and consumers --------------------------------------------------

    async def update_subscription_group(self, addr: str, config: SubscriptionGroupConfig) -> None:
        await self.call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.to_json())

    async def subscription_groups(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        resp = await self.call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return dict(SubscriptionGroupWrapper.from_json(resp.body_bytes()).subscription_group_table)

    async def delete_subscription_group(self, addr: str, group: str, *, remove_offset: bool = False) -> None:
        await self.call(
            addr,
            RequestCode.DELETE_SUBSCRIPTIONGROUP,
            ext_fields(groupName=group, removeOffset=remove_offset),
        )

    async def _group_brokers(self, group: str, topic: str | None) -> dict[str, str]:
        """Brokers that may hold the group's offsets: the topic's (when given), else every master."""
        if topic:
            return await self.topic_masters(topic)
        return {b.broker_name: b.address for b in await self.master_brokers()}

    async def consumer_progress(self, group: str, topic: str | None = None) -> ConsumerProgress:
        """GET_CONSUME_STATS from the brokers of `topic` (or every master), merged and sorted."""
        rows: list[QueueProgress] = []
        tps = 0.0
        for name, addr in (await self._group_brokers(group, topic)).items():
            resp = await self.call(
                addr, RequestCode.GET_CONSUME_STATS, ext_fields(consumerGroup=group, topic=topic)
            )
            stats = ConsumeStats.from_json(resp.body_bytes())
            tps += stats.consume_tps
            for mq, w in stats.offset_table.items():
                rows.append(
                    QueueProgress(
                        mq.topic,
                        mq.broker_name or name,
                        mq.queue_id,
                        w.broker_offset,
                        w.consumer_offset,
                        w.last_timestamp,
                    )
                )
        if not rows:
            raise AdminError(
                f"no consume stats for group {group!r}: the group has not consumed"
                + (f" topic {topic!r}" if topic else " anything")
                + " (no committed offsets)"
            )
        rows.sort(key=lambda r: (r.topic, r.broker_name, r.queue_id))
        return ConsumerProgress(group, rows, tps)

    async def consumer_connection(self, group: str) -> ConsumerConnection:
        """The group's online clients, as the first master that knows them reports them."""
        last: BrokerError | None = None
        for entry in await self.master_brokers():
            try:
                resp = await self.call(
                    entry.address, RequestCode.GET_CONSUMER_CONNECTION_LIST, ext_fields(consumerGroup=group)
                )
            except BrokerError as exc:
                last = exc
                continue
            return ConsumerConnection.from_json(resp.body_bytes())
        if last is not None and last.code not in (
            ResponseCode.CONSUMER_NOT_ONLINE,
            ResponseCode.SYSTEM_ERROR,
        ):
            raise last
        raise AdminError(f"the consumer group {group!r} is not online (no broker knows a client of it)")

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> list[ResetOffsetEntry]:
        """INVOKE_BROKER_TO_RESET_OFFSET on each master of the topic; returns the new offsets."""
        out = []
        for name, addr in (await self.topic_masters(topic)).items():
            resp = await self.call(
                addr,
                RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                ext_fields(topic=topic, group=group, timestamp=timestamp_ms, isForce=force),
            )
            if not resp.body_length:
                continue
            for mq, offset in ResetOffsetBody.from_json(resp.body_bytes()).offset_table.items():
                out.append(ResetOffsetEntry(mq.broker_name or name, mq.queue_id, offset))
        return sorted(out, key=lambda e: (e.broker_name, e.queue_id))


def group_config(group: str, **overrides: Any) -> SubscriptionGroupConfig:
    """A SubscriptionGroupConfig with RocketMQ's defaults and the given fields."""
    config = SubscriptionGroupConfig(group)
    for name, value in overrides.items():
        if value is not None:
            setattr(config, name, value)
    return config


__all__ = ["LONG_MAX", "AdminClient", "AdminError", "group_config"]
