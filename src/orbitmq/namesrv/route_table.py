"""RouteInfoManager: the NameServer's routing state and RocketMQ 4.9.7's bookkeeping rules (fact sheet
7.3): topic -> queue data per broker name, broker name -> addresses per id, cluster -> broker names,
live brokers (last update, data version, channel, HA address), filter servers. Pure bookkeeping: a
"channel" is any hashable the caller uses for the connection a broker registered over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.protocol.bodies_core import MASTER_ID
from orbitmq.protocol.perm import PERM_READ, PERM_WRITE

TOPIC_SYS_FLAG_UNIT = 0x1
TOPIC_SYS_FLAG_UNIT_SUB = 0x2

BROKER_CHANNEL_EXPIRED_SECONDS = 120.0


@dataclass(slots=True, frozen=True)
class DataVersion:
    timestamp: int = 0
    counter: int = 0


@dataclass(slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@dataclass(slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def copy(self) -> BrokerData:
        return BrokerData(self.cluster, self.broker_name, dict(self.broker_addrs))


@dataclass(slots=True)
class TopicConfigEntry:
    """What the namesrv keeps of a broker's TopicConfig."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PERM_READ | PERM_WRITE
    topic_sys_flag: int = 0


@dataclass(slots=True)
class BrokerLiveInfo:
    last_update: float
    data_version: DataVersion
    channel: object | None
    ha_server_addr: str


@dataclass(slots=True)
class RegisterResult:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(slots=True)
class TopicRoute:
    queue_datas: list[QueueData]
    broker_datas: list[BrokerData]
    filter_server_table: dict[str, list[str]]
    order_topic_conf: str | None = None


@dataclass(slots=True)
class ExpiredBroker:
    broker_addr: str
    channel: object | None
    idle_seconds: float


class RouteInfoManager:
    """RocketMQ's rules: a registration rebuilds topic queue data only for the master (id 0), and only
    when its data version changed or the id is new; an incremental registration (one topic) merges and
    never removes other topics. An address registered under another id of the same broker name is
    removed first (slave -> master). A broker name that loses its last address leaves its cluster and
    every topic's queue data; topics left without queue data are deleted."""

    def __init__(
        self, *, clock: Clock = SYSTEM_CLOCK, expiry_seconds: float = BROKER_CHANNEL_EXPIRED_SECONDS
    ):
        self.clock = clock
        self.expiry_seconds = expiry_seconds
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}

    # ---- registration -----------------------------------------------------------------------

    def register_broker(
        self,
        *,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        data_version: DataVersion | None,
        topic_configs: dict[str, TopicConfigEntry] | None,
        filter_servers: list[str] | None = None,
        channel: object | None = None,
    ) -> RegisterResult:
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)

        broker_data = self.broker_addr_table.get(broker_name)
        register_first = broker_data is None
        if broker_data is None:
            broker_data = BrokerData(cluster_name, broker_name)
            self.broker_addr_table[broker_name] = broker_data
        addrs = broker_data.broker_addrs
        # The same address under another id means the broker switched role (slave -> master).
        for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[other_id]
        old_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        register_first = register_first or old_addr is None

        version = data_version if data_version is not None else DataVersion()
        rebuild = register_first or self.is_broker_topic_config_changed(broker_addr, version)
        if topic_configs is not None and broker_id == MASTER_ID and rebuild:
            for config in topic_configs.values():
                self._create_or_update_queue_data(broker_name, config)

        self.broker_live_table[broker_addr] = BrokerLiveInfo(
            self.clock.monotonic(), version, channel, ha_server_addr
        )
        if filter_servers:
            self.filter_server_table[broker_addr] = list(filter_servers)
        else:
            self.filter_server_table.pop(broker_addr, None)

        result = RegisterResult()
        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = self.broker_live_table.get(master_addr)
                if master_live is not None:
                    result.ha_server_addr = master_live.ha_server_addr
                    result.master_addr = master_addr
        return result

    def _create_or_update_queue_data(self, broker_name: str, config: TopicConfigEntry) -> None:
        queue_data = QueueData(
            broker_name, config.read_queue_nums, config.write_queue_nums, config.perm, config.topic_sys_flag
        )
        self.topic_queue_table.setdefault(config.topic_name, {})[broker_name] = queue_data

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        live = self.broker_live_table.get(broker_addr)
        return live is None or live.data_version != data_version

    def query_broker_data_version(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return live.data_version if live is not None else None

    def touch_broker(self, broker_addr: str) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update = self.clock.monotonic()

    # ---- removal ----------------------------------------------------------------------------

    def unregister_broker(
        self, *, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return
        broker_data.broker_addrs.pop(broker_id, None)
        if not broker_data.broker_addrs:
            self._remove_broker_name(broker_name, cluster_name)

    def on_channel_destroy(self, channel: object) -> str | None:
        """A connection closed: forget the broker that registered over it; its address, if any."""
        broker_addr = next(
            (addr for addr, live in self.broker_live_table.items() if live.channel is channel), None
        )
        if broker_addr is None:
            return None
        self.remove_broker_addr(broker_addr)
        return broker_addr

    def remove_broker_addr(self, broker_addr: str) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        for broker_name, broker_data in list(self.broker_addr_table.items()):
            addrs = broker_data.broker_addrs
            for broker_id in [i for i, a in addrs.items() if a == broker_addr]:
                del addrs[broker_id]
            if not addrs:
                self._remove_broker_name(broker_name, broker_data.cluster)

    def _remove_broker_name(self, broker_name: str, cluster_name: str) -> None:
        self.broker_addr_table.pop(broker_name, None)
        for cluster in [cluster_name, *self.cluster_addr_table]:
            names = self.cluster_addr_table.get(cluster)
            if names is not None and broker_name in names:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster]
        for topic in list(self.topic_queue_table):
            queue_datas = self.topic_queue_table[topic]
            if queue_datas.pop(broker_name, None) is not None and not queue_datas:
                del self.topic_queue_table[topic]

    def scan_not_active_brokers(self) -> list[ExpiredBroker]:
        """Remove brokers silent for longer than expiry_seconds; the caller closes their channels."""
        now = self.clock.monotonic()
        expired = [
            ExpiredBroker(addr, live.channel, now - live.last_update)
            for addr, live in self.broker_live_table.items()
            if live.last_update + self.expiry_seconds < now
        ]
        for broker in expired:
            self.remove_broker_addr(broker.broker_addr)
        return expired

    # ---- queries ----------------------------------------------------------------------------

    def get_topic_route(self, topic: str) -> TopicRoute | None:
        queue_table = self.topic_queue_table.get(topic)
        if not queue_table:
            return None
        queue_datas = [
            QueueData(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
            for q in queue_table.values()
        ]
        broker_datas: list[BrokerData] = []
        filter_servers: dict[str, list[str]] = {}
        for broker_name in queue_table:
            broker_data = self.broker_addr_table.get(broker_name)
            if broker_data is None:
                continue
            broker_datas.append(broker_data.copy())
            for addr in broker_data.broker_addrs.values():
                servers = self.filter_server_table.get(addr)
                if servers:
                    filter_servers[addr] = list(servers)
        if not broker_datas:
            return None
        return TopicRoute(queue_datas, broker_datas, filter_servers)

    def cluster_info(self) -> tuple[dict[str, BrokerData], dict[str, list[str]]]:
        """(broker name -> BrokerData, cluster -> sorted broker names)."""
        brokers = {name: data.copy() for name, data in self.broker_addr_table.items()}
        clusters = {cluster: sorted(names) for cluster, names in self.cluster_addr_table.items()}
        return brokers, clusters

    def all_topics(self) -> list[str]:
        return list(self.topic_queue_table)

    def topics_by_cluster(self, cluster_name: str) -> list[str]:
        names = self.cluster_addr_table.get(cluster_name, set())
        return [
            topic
            for topic, queue_datas in self.topic_queue_table.items()
            if any(name in names for name in queue_datas)
        ]

    def unit_topics(self, *, unit: bool | None, unit_sub: bool | None) -> list[str]:
        """Topics whose first queue data's sys flag matches (TopicSysFlag: FLAG_UNIT 0x1, FLAG_UNIT_SUB 0x2);
        None = either. GET_UNIT_TOPIC_LIST: unit=True; GET_HAS_UNIT_SUB_TOPIC_LIST: unit_sub=True;
        GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: unit=False, unit_sub=True."""
        found: list[str] = []
        for topic, queue_datas in self.topic_queue_table.items():
            first = next(iter(queue_datas.values()), None)
            if first is None:
                continue
            flag = first.topic_sys_flag
            if unit is not None and bool(flag & TOPIC_SYS_FLAG_UNIT) != unit:
                continue
            if unit_sub is not None and bool(flag & TOPIC_SYS_FLAG_UNIT_SUB) != unit_sub:
                continue
            found.append(topic)
        return found

    def system_topics(self) -> tuple[list[str], str | None]:
        """Cluster names and broker names (RocketMQ's "system topics"), plus one broker address."""
        topics: list[str] = []
        broker_addr: str | None = None
        for cluster, names in self.cluster_addr_table.items():
            topics.append(cluster)
            for name in sorted(names):
                topics.append(name)
                broker_data = self.broker_addr_table.get(name)
                if broker_addr is None and broker_data is not None and broker_data.broker_addrs:
                    broker_addr = broker_data.broker_addrs[min(broker_data.broker_addrs)]
        return topics, broker_addr

    # ---- admin mutations --------------------------------------------------------------------

    def wipe_write_perm(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, wipe=True)

    def add_write_perm(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, wipe=False)

    def _operate_write_perm(self, broker_name: str, *, wipe: bool) -> int:
        count = 0
        for queue_datas in self.topic_queue_table.values():
            queue_data = queue_datas.get(broker_name)
            if queue_data is None:
                continue
            queue_data.perm = queue_data.perm & ~PERM_WRITE if wipe else PERM_READ | PERM_WRITE
            count += 1
        return count

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Forget a topic; with a cluster name only that cluster's brokers' queue data."""
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        queue_datas = self.topic_queue_table.get(topic)
        if queue_datas is None:
            return
        for broker_name in self.cluster_addr_table.get(cluster_name, set()):
            queue_datas.pop(broker_name, None)
        if not queue_datas:
            del self.topic_queue_table[topic]
