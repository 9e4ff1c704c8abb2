"""orbitmq.transport: asyncio remoting connections, server and client (see ARCHITECTURE.md).

Public API: `Connection`, `RemotingServer`, `RemotingClient`, `Processor`, `split_address`,
and `loop.run` / `loop.install_fast_loop`.
"""

from orbitmq.transport.client import RemotingClient
from orbitmq.transport.connection import Connection, split_address
from orbitmq.transport.dispatch import Processor
from orbitmq.transport.server import RemotingServer

__all__ = ["Connection", "Processor", "RemotingClient", "RemotingServer", "split_address"]
