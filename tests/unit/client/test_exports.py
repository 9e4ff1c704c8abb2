"""The public names: top-level lazy exports point at the blocking facade, which mirrors the aio API."""

from __future__ import annotations

import inspect

import orbitmq
from orbitmq.client import aio, blocking


def test_top_level_exports_are_the_blocking_classes() -> None:
    from orbitmq import LitePullConsumer, Message, Producer, PushConsumer, TransactionProducer

    assert Producer is blocking.Producer and PushConsumer is blocking.PushConsumer
    assert (
        LitePullConsumer is blocking.LitePullConsumer and TransactionProducer is blocking.TransactionProducer
    )
    assert Message is orbitmq.Message


def test_blocking_methods_mirror_the_async_ones() -> None:
    for name in ("Producer", "PushConsumer", "LitePullConsumer", "TransactionProducer"):
        sync_cls, async_cls = getattr(blocking, name), getattr(aio, name)
        public = {
            m
            for m, f in inspect.getmembers(async_cls, inspect.isfunction)
            if not m.startswith("_")
            and m
            not in {
                "publish_topics",
                "update_topic_publish_info",
                "subscriptions",
                "update_topic_subscribe_info",
                "do_rebalance",
                "persist_consumer_offset",
                "check_transaction_state",
                "send_message_back",
                "reset_offset",
                "running_info",  # answers to broker-relayed admin requests (ClientInstance calls them)
                "consume_message_directly",
                "register_orderly_listener",
            }
        }
        missing = {m for m in public if not hasattr(sync_cls, m)}
        assert not missing, f"blocking.{name} lacks {sorted(missing)}"
