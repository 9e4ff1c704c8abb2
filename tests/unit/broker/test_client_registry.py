"""Producer/consumer registries: membership changes notify, expiry and closed connections remove."""

from __future__ import annotations

from orbitmq.broker.client_registry import (
    ClientChannelInfo,
    ConsumerRegistry,
    ProducerRegistry,
    Subscription,
    parse_subscription,
)
from orbitmq.message.hashing import java_string_hash


def info(channel: str, client_id: str, now: int) -> ClientChannelInfo:
    return ClientChannelInfo(channel, client_id, "JAVA", 407, "127.0.0.1:1", now)


def test_consumer_membership_notifications() -> None:
    notified: list[tuple[str, list[str]]] = []
    registry = ConsumerRegistry(lambda g, members: notified.append((g, [m.client_id for m in members])))
    subs = [Subscription("T")]
    kwargs: dict[str, object] = {
        "consume_type": "CONSUME_PASSIVELY",
        "message_model": "CLUSTERING",
        "consume_from_where": "CONSUME_FROM_LAST_OFFSET",
        "subscriptions": subs,
        "notify": True,
    }
    assert registry.register("g", info("ch1", "c1", 0), **kwargs)  # type: ignore[arg-type]
    assert registry.register("g", info("ch2", "c2", 0), **kwargs)  # type: ignore[arg-type]
    assert not registry.register("g", info("ch1", "c1", 10), **kwargs)  # type: ignore[arg-type]
    assert notified == [("g", ["c1"]), ("g", ["c1", "c2"])]
    group = registry.get("g")
    assert group is not None and group.client_ids() == ["c1", "c2"]
    registry.channel_closed("ch2", lambda g: True)
    assert notified[-1] == ("g", ["c1"])
    expired = registry.scan_expired(200_000, 120_000, lambda g: True)
    assert [e.client_id for e in expired] == ["c1"]
    assert registry.get("g") is None


def test_producer_registry_expiry() -> None:
    producers = ProducerRegistry()
    producers.register("pg", info("ch1", "p1", 0))
    producers.register("pg", info("ch2", "p2", 100_000))
    expired = producers.scan_expired(150_000, 120_000)
    assert [e.client_id for e in expired] == ["p1"]
    producers.channel_closed("ch2")
    assert producers.groups == {}


def test_tag_subscription_filter() -> None:
    sub = parse_subscription("T", "TagA || TagB ", "TAG", 1, java_string_hash)
    assert sub.tags_set == ["TagA", "TagB"]
    assert sub.matches_tags_code(java_string_hash("TagB"))
    assert not sub.matches_tags_code(java_string_hash("TagC"))
    assert sub.matches_tags_code(None)
    star = parse_subscription("T", "*", "TAG", 1, java_string_hash)
    assert star.matches_tags_code(12345) and star.code_set == []
