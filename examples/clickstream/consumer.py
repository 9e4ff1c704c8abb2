"""Prints the results topic: a PushConsumer on `click_counts`."""

from __future__ import annotations

import json
from typing import Any

from examples.clickstream.topics import COUNTS

from orbitmq import PushConsumer
from orbitmq.client.results import ConsumeStatus


def start_printer(namesrv: str) -> Any:
    consumer = PushConsumer("clickstream_printer", namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(COUNTS, "*")

    def show(messages: list[Any], context: Any) -> ConsumeStatus:
        for msg in messages:
            row = json.loads(msg.body)
            print(f"  {row['minute'][11:16]}  {row['page']:<14} {row['count']:>6} clicks", flush=True)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.register_listener(show)
    consumer.start()
    return consumer
