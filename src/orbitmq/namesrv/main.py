"""`orbitmq namesrv [--port PORT] [-c namesrv.conf] [--kv-config-path PATH] [--host HOST]`: run a
NameServer until SIGTERM/SIGINT. Settings come from the conf file, then the flags (port 0 picks a free
one). The first stdout line is `namesrv listening on HOST:PORT` (transport/startup.py).
"""

from __future__ import annotations

import argparse

from orbitmq.namesrv.config import NamesrvConfig, load_config_file
from orbitmq.transport import startup

PROG = "orbitmq namesrv"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description="Run an orbitmq NameServer.")
    startup.add_server_arguments(parser, "namesrv.conf")
    parser.add_argument(
        "-p", "--port", type=startup.port_number, help="listen port (default 9876; 0 = pick a free port)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--kv-config-path", help="kvConfig.json location (default ~/namesrv/kvConfig.json)")
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
    if config.metrics_port >= 0:
        startup.require_ops_extra("metricsPort")
    return config


async def start_namesrv(run: startup.Startup, config: NamesrvConfig, host: str) -> None:
    """Start the nameserver (with its embedded controller when enableControllerInNamesrv=true, and its
    metrics endpoint when metricsPort is set) and announce them."""
    from orbitmq.controller.main import embedded as embedded_controller
    from orbitmq.namesrv.app import NamesrvApp

    app = NamesrvApp(config, host=host)
    controller = embedded_controller(config.to_properties())
    if controller is not None:
        await controller.start(app.server)  # its processors on the nameserver's server, or its own port
        run.on_stop(controller.stop)  # stopped after the nameserver
    await run.start(app, ("nameserver", host, config.listen_port, "--port (or listenPort)"))
    run.announce.append(f"namesrv listening on {app.address}")
    if controller is not None and controller.address:
        run.announce.append(f"controller listening on {controller.address}")
    if config.metrics_port >= 0:
        from orbitmq.namesrv.metrics import NamesrvCollector

        await run.start_metrics([NamesrvCollector(app)], host, config.metrics_port)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    return startup.server_main(
        PROG,
        args.log_level,
        lambda: build_config(args),
        lambda run, config: start_namesrv(run, config, args.host),
    )
