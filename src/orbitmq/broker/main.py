"""`orbitmq broker -c broker.conf [-n "ns1:9876;ns2:9876"] [--port PORT] [--store DIR]`: run a Broker
until SIGTERM/SIGINT. The first stdout line is `broker NAME listening on IP:PORT` (transport/startup.py,
the start-up all server commands share); listenPort=0 picks a free port.
"""

from __future__ import annotations

import argparse
import os

from orbitmq.broker.config import BrokerConfig
from orbitmq.transport import startup

PROG = "orbitmq broker"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description="Run an orbitmq Broker.")
    startup.add_server_arguments(parser, "broker.conf")
    parser.add_argument("-n", "--namesrv", help="nameserver addresses, ';'-separated (overrides namesrvAddr)")
    parser.add_argument(
        "-p",
        "--port",
        type=startup.port_number,
        help="listen port (overrides listenPort; 0 = pick a free port)",
    )
    parser.add_argument("--store", help="store root directory (overrides storePathRootDir)")
    return parser.parse_args(argv)


def build_config(args: argparse.Namespace) -> BrokerConfig:
    config = BrokerConfig.from_file(args.config) if args.config else BrokerConfig()
    overrides: dict[str, str] = {}
    if args.namesrv:
        overrides["namesrvAddr"] = args.namesrv
    if args.port is not None:
        overrides["listenPort"] = str(args.port)
    if args.store:
        overrides["storePathRootDir"] = args.store
    if args.metrics_port is not None:
        overrides["metricsPort"] = str(args.metrics_port)
    config.update(overrides)
    if args.config:
        config.broker_config_path = os.path.abspath(args.config)
    if config.metrics_port >= 0:
        startup.require_ops_extra("metricsPort")
    if config.grpc_server_port >= 0:
        startup.require_grpc_extra("grpcServerPort")
    return config


async def start_broker(run: startup.Startup, config: BrokerConfig) -> None:
    """Start the broker (and its metrics endpoint when metricsPort is set) and announce them."""
    from orbitmq.broker.app import BrokerApp
    from orbitmq.broker.recovery_bar import terminal_recovery_bar
    from orbitmq.store.dir_lock import check_store_available

    check_store_available(config.store_path_root_dir)  # names the holder of a store in use
    app = BrokerApp(config)
    app.recovery_progress = terminal_recovery_bar()
    await run.start(app)
    run.announce.append(f"broker {config.broker_name} listening on {app.broker_addr}")
    if app.ha_listen_addr is not None:
        run.announce.append(f"broker {config.broker_name} ha listening on {app.ha_listen_addr}")
    if config.grpc_server_port >= 0:  # RocketMQ 5.x clients' endpoint (orbitmq/proxy)
        from orbitmq.proxy import start_grpc_endpoint

        grpc_endpoint = await start_grpc_endpoint(app, config.grpc_server_port)
        run.on_stop(grpc_endpoint.stop)
        run.announce.append(f"grpc listening on {grpc_endpoint.address}")
    if config.metrics_port >= 0:
        from orbitmq.broker.metrics import BrokerCollector

        await run.start_metrics([BrokerCollector(app)], config.broker_ip1, config.metrics_port)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    return startup.server_main(PROG, args.log_level, lambda: build_config(args), start_broker)
