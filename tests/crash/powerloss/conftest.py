"""A power-loss disk (FUSE, see orbitmq.testing.powerloss) per test; skipped only where FUSE is missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.testing.powerloss import PowerLossDisk, unavailable_reason


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[PowerLossDisk]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"power-loss file system unavailable: {reason}")
    with PowerLossDisk(tmp_path / "disk") as d:
        yield d
