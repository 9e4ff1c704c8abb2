"""orbitmq.testing.fixtures work when a conftest.py imports them (see conftest.py here)."""

from __future__ import annotations

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess
from orbitmq.transport import RemotingClient


async def test_namesrv_and_remoting_client_fixtures(
    namesrv: ServerProcess, remoting_client: RemotingClient
) -> None:
    assert namesrv.is_running()
    assert namesrv.address.startswith("127.0.0.1:") and namesrv.port > 0
    resp = await remoting_client.invoke(
        namesrv.address, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout=5
    )
    assert resp.code == ResponseCode.SUCCESS
    assert namesrv.stdout_path.read_text().startswith(f"namesrv listening on {namesrv.address}")
