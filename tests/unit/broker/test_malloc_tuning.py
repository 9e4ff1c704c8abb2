"""glibc heap thresholds (`mallocMmapThreshold`, `mallocTrimThreshold`, common/malloc_tuning.py): buffers
of a megabyte freed and allocated again reuse heap memory instead of faulting in fresh pages, and the
broker applies its broker.conf values when it starts."""

from __future__ import annotations

import asyncio
import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq.broker.app import BrokerApp
from orbitmq.broker.config import BrokerConfig
from orbitmq.common import malloc_tuning

from .conftest import small_broker_properties

GLIBC = hasattr(ctypes.CDLL(None), "mallopt")

# Four frames of ~1 MiB alive at a time, freed and allocated again, as a broker taking batch sends.
CHURN = """
import resource, sys
from orbitmq.common.malloc_tuning import tune_malloc
if sys.argv[1] == "tuned":
    assert tune_malloc(32 << 20, 64 << 20)
live = []
for i in range(40):
    live.append(bytes(1 << 20))
    if len(live) > 4:
        live.pop(0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(200):
    live.append(b"x" * ((1 << 20) + 4096 * (i % 7)))
    if len(live) > 4:
        del live[0]
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    src = str(Path(malloc_tuning.__file__).resolve().parents[2])
    out = subprocess.run(
        [sys.executable, "-c", CHURN, mode],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": src},
    )
    return int(out.stdout)


def test_thresholds_are_byte_counts() -> None:
    with pytest.raises(ValueError, match="byte counts"):
        malloc_tuning.tune_malloc(-1, 0)
    assert malloc_tuning.tune_malloc(0, 0)  # nothing asked, nothing changed


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_tuned_heap_reuses_megabyte_buffers() -> None:
    default, tuned = _faults("default"), _faults("tuned")
    # 200 buffers of 256 pages: the default maps (and faults in) most of them afresh.
    assert default > 10_000, default
    assert tuned < default / 10, (tuned, default)


async def test_the_broker_applies_its_malloc_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(malloc_tuning, "tune_malloc", lambda m, t: calls.append((m, t)) or True)
    config = BrokerConfig.from_properties(
        small_broker_properties(tmp_path, mallocMmapThreshold="12345678", mallocTrimThreshold="0")
    )
    app = BrokerApp(config)
    await app.start()
    try:
        assert calls == [(12345678, 0)]
        await asyncio.sleep(0.05)  # (the broker's services start before it stops)
    finally:
        await app.stop()
    defaults = BrokerConfig()
    assert (defaults.malloc_mmap_threshold, defaults.malloc_trim_threshold) == (32 << 20, 64 << 20)


@pytest.mark.parametrize("key", ["mallocMmapThreshold", "mallocTrimThreshold"])
def test_negative_thresholds_are_refused(key: str) -> None:
    with pytest.raises(ValueError, match=key):
        BrokerApp(BrokerConfig.from_properties({key: "-1"}))
