"""RecoveryReporter: log lines when not on a terminal, a rich bar (cleared at the end) on one."""

from __future__ import annotations

import io
import logging

import pytest

from orbitmq.broker.recovery_progress import RecoveryReporter


def test_logs_progress_when_not_a_terminal(caplog: pytest.LogCaptureFixture) -> None:
    reporter = RecoveryReporter(io.StringIO(), log_every=0.0)
    with caplog.at_level(logging.INFO, logger="orbitmq.broker"):
        reporter("scan", 1 << 20, 4 << 20)
        reporter("dispatch", 4 << 20, 4 << 20)
        reporter("dispatch", 0, 0)  # an empty store: nothing to say
    reporter.close()
    assert [r.getMessage() for r in caplog.records] == [
        "recovery: checking the commit log 1.0/4.0 MiB (25%)",
        "recovery: rebuilding queues and index 4.0/4.0 MiB (100%)",
    ]


def test_draws_a_bar_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    reporter = RecoveryReporter(out)
    reporter("dispatch", 1 << 20, 2 << 20)
    reporter("dispatch", 2 << 20, 2 << 20)
    reporter.close()
    assert "rebuilding queues and index" in out.getvalue()
