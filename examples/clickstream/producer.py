"""Click events: JSON `{"page", "user", "ts"}` sent to topic `clicks`, tagged by section, keyed by user."""

from __future__ import annotations

import json
import random
import threading
import time

from examples.clickstream.topics import CLICKS

from orbitmq import Message, Producer

PAGES = ["/home", "/search", "/product/42", "/product/7", "/cart", "/checkout"]


def produce_clicks(namesrv: str, stop: threading.Event, *, per_second: int = 50, seed: int = 7) -> int:
    """Sends about `per_second` clicks a second until `stop` is set; returns how many were sent."""
    rng = random.Random(seed)
    sent = 0
    with Producer("clickstream_producer", namesrv) as producer:
        while not stop.is_set():
            started = time.monotonic()
            for _ in range(per_second // 10):
                page = rng.choice(PAGES)
                user = f"user{rng.randrange(100)}"
                body = json.dumps({"page": page, "user": user, "ts": int(time.time() * 1000)})
                producer.send(Message.create(CLICKS, body, tags=page.split("/")[1], keys=user))
                sent += 1
            stop.wait(max(0.0, 0.1 - (time.monotonic() - started)))
    return sent
