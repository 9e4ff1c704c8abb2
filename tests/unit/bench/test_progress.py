"""The progress line: rewritten in place on a terminal, plain lines otherwise (orbitmq.bench.progress)."""

from __future__ import annotations

import io

from orbitmq.bench.progress import Progress


def test_plain_mode_writes_whole_lines_only() -> None:
    out = io.StringIO()
    p = Progress(out, tty=False, plain_every=0.0)
    p.begin("W1 1 sender nats", 5.0)
    p.count = 1234
    p.tick()
    p.end("W1 1 sender nats: 1,234 msgs")
    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0] == "W1 1 sender nats: running (up to 5 s)"
    assert "1,234 msgs" in lines[1] and "msgs/s" in lines[1]
    assert lines[-1] == "W1 1 sender nats: 1,234 msgs"


def test_tty_mode_rewrites_one_line_and_clears_it() -> None:
    out = io.StringIO()
    p = Progress(out, tty=True)
    p.begin("W3 catch-up redis", 60.0, phase="draining")
    p.count = 10
    p.tick()
    p.tick()
    p.end("done")
    text = out.getvalue()
    assert text.count("\r") >= 3  # two refreshes and the clearing
    assert "[draining]" in text
    assert text.endswith("done\n")


def test_a_detected_terminal_gets_a_rich_bar_that_is_cleared() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    p = Progress(out)
    assert p.rich
    p.begin("W1 1 sender orbitmq", 5.0)
    p.count = 4321
    p.tick()
    p.set_phase("draining")
    p.tick()
    p.end("W1 1 sender orbitmq: 4,321 msgs")
    text = out.getvalue()
    assert "W1 1 sender orbitmq" in text
    assert text.rstrip().endswith("W1 1 sender orbitmq: 4,321 msgs")
