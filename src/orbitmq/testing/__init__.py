"""orbitmq.testing: real server processes on 127.0.0.1 with port 0, and a fake clock.

    with start_namesrv(tmp_path) as ns, start_broker(tmp_path, ns.address) as broker:
        ... ns.address, broker.broker_addr, broker.ha_addr ...

pytest fixtures live in `orbitmq.testing.fixtures` (imported only when asked for: it needs pytest).
"""

from orbitmq.common.clock import FakeClock
from orbitmq.testing.launch import (
    broker_properties,
    start_broker,
    start_namesrv,
    start_serve,
    write_properties,
)
from orbitmq.testing.process import ServerProcess, ServerStartError, start_process

__all__ = [
    "FakeClock",
    "ServerProcess",
    "ServerStartError",
    "broker_properties",
    "start_broker",
    "start_namesrv",
    "start_process",
    "start_serve",
    "write_properties",
]
