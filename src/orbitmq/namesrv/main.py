"""`orbitmq namesrv`: run a NameServer until SIGTERM/SIGINT.

    orbitmq namesrv [--port PORT] [-c namesrv.conf] [--kv-config-path PATH] [--host HOST]

Settings come from the conf file (RocketMQ property names, e.g. listenPort, kvConfigPath,
orderMessageEnable), then the command-line flags. Port 0 picks a free port. The first line on stdout
is `namesrv listening on HOST:PORT` (tools and orbitmq.testing read the port from it).
"""

from __future__ import annotations

import argparse
import logging
import sys

from orbitmq.common.errors import OrbitError
from orbitmq.controller.main import embedded as embedded_controller
from orbitmq.namesrv.app import NamesrvApp
from orbitmq.namesrv.config import NamesrvConfig, load_config_file
from orbitmq.transport import loop


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="orbitmq namesrv", description="Run an orbitmq NameServer.")
    parser.add_argument("-c", "--config", help="namesrv.conf (Java properties, RocketMQ names)")
    parser.add_argument("-p", "--port", type=int, help="listen port (default 9876; 0 = pick a free port)")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--kv-config-path", help="kvConfig.json location (default ~/namesrv/kvConfig.json)")
    parser.add_argument(
        "--metrics-port", type=int, help="Prometheus endpoint port (overrides metricsPort; 0 = a free port)"
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return parser.parse_args(argv)


def build_config(args: argparse.Namespace) -> NamesrvConfig:
    config = NamesrvConfig.from_properties(load_config_file(args.config) if args.config else {})
    if args.config:
        config.resolve_beside(args.config)
    if args.port is not None:
        config.listen_port = args.port
    if args.kv_config_path:
        config.kv_config_path = args.kv_config_path
    if args.metrics_port is not None:
        config.metrics_port = args.metrics_port
    return config


async def serve(config: NamesrvConfig, host: str) -> None:
    app = NamesrvApp(config, host=host)
    controller = embedded_controller(config.to_properties())  # enableControllerInNamesrv=true
    if controller is not None:
        await controller.start(app.server)
    await app.start()
    announce = [f"namesrv listening on {app.address}"]
    if controller is not None and controller.address:
        announce.append(f"controller listening on {controller.address}")
    metrics = None
    try:
        if config.metrics_port >= 0:
            try:
                from orbitmq.namesrv.metrics import NamesrvCollector
                from orbitmq.transport.metrics_http import start_metrics
            except ImportError as exc:
                raise ValueError(
                    f"metricsPort needs the ops extra (pip install 'orbitmq[ops]'): {exc}"
                ) from None

            metrics = await start_metrics([NamesrvCollector(app)], host, config.metrics_port)
            announce.append(f"metrics listening on {metrics.url}")
        await loop.wait_for_stop_signal(announce)
    finally:
        if metrics is not None:
            await metrics.stop()
        await app.stop()
        if controller is not None:
            await controller.stop()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = build_config(args)
    except (OSError, ValueError) as exc:
        print(f"orbitmq namesrv: {exc}", file=sys.stderr)
        return 2
    try:
        loop.run(serve(config, args.host))
    except (ValueError, OrbitError) as exc:  # found at startup: the ACL file, TLS settings
        print(f"orbitmq namesrv: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"orbitmq namesrv: cannot listen on {args.host}:{config.listen_port}: {exc}", file=sys.stderr)
        return 1
    return 0
