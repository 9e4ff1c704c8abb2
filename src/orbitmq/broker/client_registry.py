"""Who is connected: producer and consumer groups, each member keyed by its connection (opaque here).

HEART_BEAT registers or refreshes a member; UNREGISTER_CLIENT, a closed connection or an expired
heartbeat (`scan_expired`) removes it. A consumer group also holds its subscriptions, and
`on_consumer_ids_changed` fires when its membership changes (NOTIFY_CONSUMER_IDS_CHANGED).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orbitmq.protocol.bodies_client import SubscriptionFields

if TYPE_CHECKING:  # the SQL92 parser is imported when a SQL92 subscription first arrives
    from orbitmq.protocol.sql92 import Selector


@dataclass(slots=True)
class Subscription(SubscriptionFields):
    # The compiled SQL92 selector (broker/sql_filter.py), None for TAG subscriptions.
    selector: Selector | None = field(default=None, compare=False, repr=False)

    def matches_tags_code(self, tags_code: int | None) -> bool:
        """The broker-side TAG filter: `*` matches everything, else the CQ tags code must be listed."""
        if tags_code is None or self.sub_string in ("*", "") or not self.code_set:
            return True
        code = tags_code & 0xFFFFFFFF
        code = code - (1 << 32) if code >= 1 << 31 else code  # compare as Java (int) tagsCode
        return code in self.code_set


@dataclass(slots=True)
class ClientChannelInfo:
    channel: Hashable
    client_id: str
    language: str
    version: int
    remote_address: str
    last_update_ms: int


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    channels: dict[Hashable, ClientChannelInfo] = field(default_factory=dict)
    last_update_ms: int = 0

    def client_ids(self) -> list[str]:
        return [c.client_id for c in self.channels.values()]


class ProducerRegistry:
    def __init__(self) -> None:
        self.groups: dict[str, dict[Hashable, ClientChannelInfo]] = {}

    def register(self, group: str, info: ClientChannelInfo) -> None:
        members = self.groups.setdefault(group, {})
        existing = members.get(info.channel)
        if existing is None:
            members[info.channel] = info
        else:
            existing.last_update_ms = info.last_update_ms

    def unregister(self, group: str, channel: Hashable) -> None:
        members = self.groups.get(group)
        if members is not None:
            members.pop(channel, None)
            if not members:
                del self.groups[group]

    def channel_closed(self, channel: Hashable) -> None:
        for group in list(self.groups):
            self.unregister(group, channel)

    def scan_expired(self, now_ms: int, expiry_ms: int) -> list[ClientChannelInfo]:
        expired: list[ClientChannelInfo] = []
        for group in list(self.groups):
            for ch, info in list(self.groups[group].items()):
                if now_ms - info.last_update_ms > expiry_ms:
                    expired.append(info)
                    self.unregister(group, ch)
        return expired


class ConsumerRegistry:
    def __init__(self, on_consumer_ids_changed: Callable[[str, list[ClientChannelInfo]], None]) -> None:
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self._notify = on_consumer_ids_changed

    def get(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def register(
        self,
        group: str,
        info: ClientChannelInfo,
        *,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        subscriptions: list[Subscription],
        notify: bool,
    ) -> bool:
        """Add or refresh a member; returns True when membership or subscriptions changed."""
        g = self.groups.get(group)
        if g is None:
            g = self.groups[group] = ConsumerGroupInfo(group)
        g.consume_type, g.message_model, g.consume_from_where = (
            consume_type,
            message_model,
            consume_from_where,
        )
        g.last_update_ms = info.last_update_ms
        existing = g.channels.get(info.channel)
        members_changed = False
        if existing is None:
            g.channels[info.channel] = info
            members_changed = True
        else:
            if existing.client_id != info.client_id:
                existing.client_id = info.client_id
                members_changed = True
            existing.last_update_ms = info.last_update_ms
        subs_changed = False
        new_subs = {s.topic: s for s in subscriptions}
        for topic, sub in new_subs.items():
            old = g.subscriptions.get(topic)
            if old is None or old.sub_string != sub.sub_string or old.sub_version < sub.sub_version:
                g.subscriptions[topic] = sub
                subs_changed = True
        if members_changed and notify:
            self._notify(group, list(g.channels.values()))
        return members_changed or subs_changed

    def unregister(self, group: str, channel: Hashable, *, notify: bool) -> None:
        g = self.groups.get(group)
        if g is None or g.channels.pop(channel, None) is None:
            return
        if not g.channels:
            del self.groups[group]
        elif notify:
            self._notify(group, list(g.channels.values()))

    def channel_closed(self, channel: Hashable, notify_of: Callable[[str], bool]) -> None:
        for group in list(self.groups):
            if channel in self.groups[group].channels:
                self.unregister(group, channel, notify=notify_of(group))

    def scan_expired(
        self, now_ms: int, expiry_ms: int, notify_of: Callable[[str], bool]
    ) -> list[ClientChannelInfo]:
        expired: list[ClientChannelInfo] = []
        for group in list(self.groups):
            g = self.groups[group]
            for ch, info in list(g.channels.items()):
                if now_ms - info.last_update_ms > expiry_ms:
                    expired.append(info)
                    self.unregister(group, ch, notify=notify_of(group))
        return expired

    def groups_of_topic(self, topic: str) -> set[str]:
        return {name for name, g in self.groups.items() if topic in g.subscriptions}

    def find_subscription(self, group: str, topic: str) -> Subscription | None:
        g = self.groups.get(group)
        return None if g is None else g.subscriptions.get(topic)


def parse_subscription(
    topic: str,
    expression: str | None,
    expression_type: str | None,
    sub_version: int,
    hash_tag: Callable[[str], int],
) -> Subscription:
    """RocketMQ's FilterAPI.build: TAG expressions (`*` or `a || b`) become tags and their hash codes;
    any other type (SQL92) keeps its expression whole, for the broker's property filter."""
    expr = (expression or "").strip()
    sub = Subscription(topic, expression_type=expression_type or "TAG", sub_version=sub_version)
    if sub.expression_type != "TAG":
        sub.sub_string = expression or ""
        return sub
    if not expr or expr == "*":
        sub.sub_string = "*"
        return sub
    sub.sub_string = expr
    for raw in expr.split("||"):
        tag = raw.strip()
        if tag:
            sub.tags_set.append(tag)
            sub.code_set.append(hash_tag(tag))
    return sub
