"""Helpers for in-process broker tests."""

from __future__ import annotations

from pathlib import Path


def small_broker_properties(root: Path, **extra: str) -> dict[str, str]:
    """broker.conf for a BrokerApp in this process: store under `root`, a free port on 127.0.0.1, small
    segments; `extra` keys added (or overriding)."""
    return {
        "storePathRootDir": str(root / "store"),
        "listenPort": "0",
        "brokerIP1": "127.0.0.1",
        "mappedFileSizeCommitLog": str(1024 * 1024),
        "mappedFileSizeConsumeQueue": str(20 * 1000),
        **extra,
    }
