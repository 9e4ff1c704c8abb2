"""pytest fixtures over real processes: `namesrv`, `broker`, `serve_process`, `remoting_client`.

Use with `pytest_plugins = ["orbitmq.testing.fixtures"]` (top-level conftest only) or, in any conftest,
`from orbitmq.testing.fixtures import namesrv, broker  # noqa: F401` (in a test module ruff reports
F811). Each fixture starts its processes in the test's tmp_path and stops them afterwards.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from orbitmq.testing.launch import start_broker, start_namesrv, start_serve
from orbitmq.testing.process import ServerProcess
from orbitmq.transport import RemotingClient


@pytest.fixture
def namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    """A NameServer process; `.address` is "127.0.0.1:PORT"."""
    with start_namesrv(tmp_path) as proc:
        yield proc


@pytest.fixture
def broker(tmp_path: Path, namesrv: ServerProcess) -> Iterator[ServerProcess]:
    """A master broker (broker-a, DefaultCluster) registered with the `namesrv` fixture."""
    with start_broker(tmp_path, namesrv.address) as proc:
        yield proc


@pytest.fixture
def serve_process(tmp_path: Path) -> Iterator[ServerProcess]:
    """`orbitmq serve`: embedded namesrv + broker; `.address` = namesrv, `.broker_addr` = broker."""
    with start_serve(tmp_path) as proc:
        yield proc


@pytest.fixture
async def remoting_client() -> AsyncIterator[RemotingClient]:
    """A RemotingClient closed after the test."""
    client = RemotingClient()
    try:
        yield client
    finally:
        await client.close()
