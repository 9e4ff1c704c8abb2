"""RecoveryBar: a rich bar for recoveries worth watching, nothing for small ones, cleared on close."""

from __future__ import annotations

import io

from orbitmq.broker.recovery_bar import RecoveryBar
from orbitmq.store.recovery_progress import RecoveryStep


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_draws_phases_of_a_large_recovery_and_stops() -> None:
    out = Tty()
    bar = RecoveryBar(out, min_bytes=1 << 20)
    bar(RecoveryStep("scan", 2 << 20, 4 << 20))
    bar(RecoveryStep("dispatch", 4 << 20, 4 << 20))
    bar.close()
    text = out.getvalue()
    assert "checking the commit log" in text and "rebuilding queues and index" in text
    bar.close()  # twice is fine


def test_small_recoveries_draw_nothing() -> None:
    out = Tty()
    bar = RecoveryBar(out, min_bytes=1 << 20)
    bar(RecoveryStep("scan", 10, 100))
    bar.close()
    assert out.getvalue() == ""
