"""Test helpers for the HTTP endpoints of real server processes: the URL a process announced
(`metrics listening on ...`, `console listening on ...`) and a parsed Prometheus scrape."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from orbitmq.testing.process import ServerProcess

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def listening_url(proc: ServerProcess, what: str = "metrics", timeout: float = 10.0) -> str:
    """The URL of the process's `<what> listening on URL` stdout line (printed after its addresses)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in Path(proc.stdout_path).read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(f"{what} listening on "):
                return line.split()[-1]
        time.sleep(0.05)
    raise AssertionError(f"{proc.name} printed no '{what} listening on' line within {timeout}s")


def scrape(url: str) -> Samples:
    """GET the exposition and parse it with prometheus_client's own parser: (name, labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=5) as response:
        content_type = response.headers["Content-Type"]
        if not content_type.startswith("text/plain"):
            raise AssertionError(f"unexpected Content-Type {content_type!r}")
        text = response.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The one sample of `name` whose labels include `labels` (0.0 if there is none)."""
    want = set(labels.items())
    found = [v for (n, lbl), v in samples.items() if n == name and want <= lbl]
    if len(found) > 1:
        raise AssertionError(f"{name} {labels} matches {len(found)} samples")
    return found[0] if found else 0.0
