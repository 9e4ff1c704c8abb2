"""BrokerStatsAdmin: the broker-wide stats and cleaning operations of mqadmin's brokerConsumeStats,
statsAll and cleanExpiredCQ verbs (GET_BROKER_CONSUME_STATS 317, VIEW_BROKER_STATS_DATA 315,
CLEAN_EXPIRED_CONSUMEQUEUE 306). Bodies: ConsumeStatsList (object-keyed ConsumeStats maps, read with
java_json) and BrokerStatsData (fact sheet 3.5; RocketMQ's common/protocol/body)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orbitmq.admin.base import AdminBase, ext_fields
from orbitmq.common.errors import BrokerError
from orbitmq.protocol import java_json
from orbitmq.protocol.bodies import ConsumeStats
from orbitmq.protocol.codes import RequestCode

STATS_WINDOWS = ("statsMinute", "statsHour", "statsDay")


@dataclass(slots=True)
class BrokerConsumeStats:
    """One broker's ConsumeStatsList: group -> one ConsumeStats per topic, and the summed diff."""

    broker_addr: str
    total_diff: int
    groups: dict[str, list[ConsumeStats]] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class StatsWindow:
    sum: int
    tps: float
    avgpt: float


def _window(obj: Any) -> StatsWindow:
    obj = obj if isinstance(obj, dict) else {}
    return StatsWindow(int(obj.get("sum", 0)), float(obj.get("tps", 0.0)), float(obj.get("avgpt", 0.0)))


class BrokerStatsAdmin(AdminBase):
    async def broker_consume_stats(
        self, addr: str, *, is_order: bool = False, timeout: float | None = None
    ) -> BrokerConsumeStats:
        """Every subscription group's ConsumeStats per topic on one broker (`is_order`: ordered topics
        only); mqadmin waits up to 50 s for it on a broker with many groups."""
        resp = await self.call(
            addr, RequestCode.GET_BROKER_CONSUME_STATS, ext_fields(isOrder=is_order), timeout=timeout
        )
        obj = java_json.loads(resp.body_bytes())
        out = BrokerConsumeStats(str(obj.get("brokerAddr") or addr), int(obj.get("totalDiff", 0)))
        for entry in obj.get("consumeStatsList") or []:
            for group, stats in dict(entry).items():
                out.groups.setdefault(str(group), []).extend(ConsumeStats.from_any(s) for s in stats or [])
        return out

    async def view_broker_stats_data(self, addr: str, name: str, key: str) -> dict[str, StatsWindow]:
        """{"statsMinute": .., "statsHour": .., "statsDay": ..}; BrokerError SYSTEM_ERROR when the broker
        never counted that item."""
        resp = await self.call(
            addr, RequestCode.VIEW_BROKER_STATS_DATA, ext_fields(statsName=name, statsKey=key)
        )
        obj = java_json.loads(resp.body_bytes())
        return {w: _window(obj.get(w)) for w in STATS_WINDOWS}

    async def clean_expired_consume_queue(
        self, *, broker_addr: str | None = None, cluster: str | None = None
    ) -> dict[str, bool]:
        """CLEAN_EXPIRED_CONSUMEQUEUE on one broker (-b) or every broker of a cluster (-c), or of every
        cluster when neither is given (mqadmin's rule); address -> whether it answered SUCCESS."""
        if broker_addr:
            targets = [broker_addr]
        elif cluster:
            targets = await self.broker_targets(None, cluster, masters_only=False)
        else:
            targets = [b.address for b in await self.brokers()]
        out: dict[str, bool] = {}
        for addr in targets:
            try:
                await self.call(addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
            except BrokerError:
                out[addr] = False
            else:
                out[addr] = True
        return out
