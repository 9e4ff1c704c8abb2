"""`orbitmq controller -c controller.conf`: run a standalone controller until SIGTERM/SIGINT.

The first line on stdout is `controller listening on HOST:PORT` (listenPort=0 picks a free port).
`embedded(props)` gives the nameserver its controller when namesrv.conf says enableControllerInNamesrv.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from pathlib import Path

from orbitmq.common.errors import OrbitError
from orbitmq.controller.config import CONTROLLER_KEYS, ControllerConfig
from orbitmq.controller.service import ControllerService
from orbitmq.protocol.java_values import parse_boolean
from orbitmq.protocol.properties_text import decode_properties_text
from orbitmq.transport import loop
from orbitmq.transport.server import RemotingServer


class ControllerNode:
    """A controller and where it listens: its own address among controllerDLegerPeers when it has one
    (brokers' controllerAddr, as in RocketMQ's deployment guide), else the nameserver's port when
    embedded, else listenPort."""

    def __init__(self, config: ControllerConfig, host: str = "127.0.0.1") -> None:
        self.config = config
        self.service = ControllerService(config)
        self._host = host
        self.server: RemotingServer | None = None
        self.address = ""  # of its own server; embedded in a nameserver's, the nameserver's address

    async def start(self, namesrv_server: RemotingServer | None = None) -> None:
        own = self.config.self_address
        if own is None and namesrv_server is not None:
            self.service.attach(namesrv_server)
        else:
            host, port = own.rsplit(":", 1) if own else (self._host, str(self.config.listen_port))
            self.server = RemotingServer(host, int(port), name="controller")
            self.service.attach(self.server)
        await self.service.start()
        if self.server is not None:
            try:
                await self.server.start()
            except BaseException:
                await self.service.stop()
                raise
            self.address = self.server.address

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
        await self.service.stop()


def embedded(props: Mapping[str, str]) -> ControllerNode | None:
    """The controller a nameserver runs when `enableControllerInNamesrv=true` (its namesrv.conf then
    holds the controller's keys too); None otherwise."""
    if not parse_boolean(props.get("enableControllerInNamesrv", "false").strip()):
        return None
    own = {k: v for k, v in props.items() if k in CONTROLLER_KEYS and k != "enableControllerInNamesrv"}
    return ControllerNode(ControllerConfig.from_properties(own))


async def serve(config: ControllerConfig, host: str) -> None:
    node = ControllerNode(config, host)
    await node.start()
    try:
        await loop.wait_for_stop_signal([f"controller listening on {node.address}"])
    finally:
        await node.stop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="orbitmq controller", description="Run an orbitmq controller.")
    parser.add_argument("-c", "--config", help="controller.conf (Java properties, RocketMQ 5 names)")
    parser.add_argument("-p", "--port", type=int, help="listen port (default 9878; 0 = a free port)")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        text = Path(args.config).read_text(encoding="utf-8") if args.config else ""
        config = ControllerConfig.from_properties(decode_properties_text(text))
        if args.port is not None:
            config.listen_port = args.port
    except (OSError, ValueError) as exc:
        print(f"orbitmq controller: {exc}", file=sys.stderr)
        return 2
    try:
        loop.run(serve(config, args.host))
    except (ValueError, OrbitError, ImportError) as exc:
        print(f"orbitmq controller: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"orbitmq controller: cannot listen on {args.host}:{config.listen_port}: {exc}", file=sys.stderr
        )
        return 1
    return 0
