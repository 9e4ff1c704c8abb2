"""Log refused requests at most once a second (with the count since the last line), so a client
retrying with a wrong key cannot flood the log."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable


class RefusalLog:
    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._interval = interval
        self._monotonic = monotonic
        self._last = float("-inf")
        self._suppressed = 0

    def refused(self, code: int, remote_address: str, reason: object) -> None:
        now = self._monotonic()
        if now - self._last < self._interval:
            self._suppressed += 1
            return
        self._log.warning(
            "ACL refused code %d from %s: %s (%d more refused since the last line)",
            code,
            remote_address,
            reason,
            self._suppressed,
        )
        self._last, self._suppressed = now, 0
