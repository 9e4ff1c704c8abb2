"""`orbitmq broker`: run a Broker from a RocketMQ broker.conf until SIGTERM/SIGINT.

    orbitmq broker -c broker.conf [-n "ns1:9876;ns2:9876"] [--port PORT] [--store DIR]

The first line on stdout is `broker NAME listening on IP:PORT` (flushed): tools and orbitmq.testing
read the real port from it (listenPort=0 picks a free one). Exit code 0 after a clean shutdown.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

from orbitmq.broker.config import BrokerConfig
from orbitmq.common.errors import OrbitError, StoreError

if TYPE_CHECKING:
    from orbitmq.proxy.server import GrpcEndpoint


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="orbitmq broker", description="Run an orbitmq Broker.")
    parser.add_argument("-c", "--config", help="broker.conf (Java properties, RocketMQ names)")
    parser.add_argument("-n", "--namesrv", help="nameserver addresses, ';'-separated (overrides namesrvAddr)")
    parser.add_argument(
        "-p", "--port", type=int, help="listen port (overrides listenPort; 0 = pick a free port)"
    )
    parser.add_argument("--store", help="store root directory (overrides storePathRootDir)")
    parser.add_argument(
        "--metrics-port", type=int, help="Prometheus endpoint port (overrides metricsPort; 0 = a free port)"
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
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
    return config


async def serve(config: BrokerConfig) -> None:
    from orbitmq.broker.app import BrokerApp
    from orbitmq.broker.recovery_bar import terminal_recovery_bar
    from orbitmq.transport import loop

    app = BrokerApp(config)
    app.recovery_progress = terminal_recovery_bar()
    await app.start()
    announce = [f"broker {config.broker_name} listening on {app.broker_addr}"]
    if app.ha_listen_addr is not None:
        announce.append(f"broker {config.broker_name} ha listening on {app.ha_listen_addr}")
    metrics = None
    grpc_endpoint: GrpcEndpoint | None = None
    try:
        if config.grpc_server_port >= 0:  # RocketMQ 5.x clients' endpoint (orbitmq/proxy)
            from orbitmq.proxy import start_grpc_endpoint

            grpc_endpoint = await start_grpc_endpoint(app, config.grpc_server_port)
            announce.append(f"grpc listening on {grpc_endpoint.address}")
        if config.metrics_port >= 0:
            try:
                from orbitmq.broker.metrics import BrokerCollector
                from orbitmq.transport.metrics_http import start_metrics
            except ImportError as exc:
                raise ValueError(
                    f"metricsPort needs the ops extra (pip install 'orbitmq[ops]'): {exc}"
                ) from None

            metrics = await start_metrics([BrokerCollector(app)], config.broker_ip1, config.metrics_port)
            announce.append(f"metrics listening on {metrics.url}")
        await loop.wait_for_stop_signal(announce)
    finally:
        if grpc_endpoint is not None:
            await grpc_endpoint.stop()
        if metrics is not None:
            await metrics.stop()
        await app.stop()


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
        print(f"orbitmq broker: {exc}", file=sys.stderr)
        return 2
    from orbitmq.store.dir_lock import check_store_available
    from orbitmq.transport import loop

    try:
        check_store_available(config.store_path_root_dir)
        loop.run(serve(config))
    except (OSError, StoreError) as exc:
        # one line naming the store / port, not a traceback
        print(f"orbitmq broker: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OrbitError) as exc:  # found at startup: the ACL file, TLS settings
        print(f"orbitmq broker: {exc}", file=sys.stderr)
        return 2
    return 0
