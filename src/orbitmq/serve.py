"""`orbitmq serve`: a NameServer and a Broker in one process on 127.0.0.1, the quick start (`--brokers N`:
N broker processes beside the nameserver, serve_brokers.py). The broker port follows --port
(10911 + 10 x (port - 9876)) where that gives a usable pair, else a free one; the store is --store,
$ORBITMQ_HOME/store or ~/.orbitmq/store. Start-up, announce lines and exit codes: transport/startup.py;
--metrics-port serves both servers' Prometheus series on one endpoint, --console-port the web console.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from orbitmq.broker.config import BrokerConfig, parse_properties_text
from orbitmq.transport.startup import (
    Startup,
    add_server_arguments,
    configure_logging,
    port_number,
    read_settings,
    require_grpc_extra,
    require_ops_extra,
    server_main,
)

if TYPE_CHECKING:
    from orbitmq.namesrv.config import NamesrvConfig

PROG = "orbitmq serve"
HOST = "127.0.0.1"  # serve is the quick start: it listens on this host only
DEFAULT_NAMESRV_PORT = 9876
DEFAULT_BROKER_PORT = 10911
PORT_STEP = 10  # broker ports of neighbouring instances 10 apart: room for each one's HA port (+1)
LOWEST_BROKER_PORT = 1024  # the derived port stays out of the ports only root may bind


def default_home() -> Path:
    home = os.environ.get("ORBITMQ_HOME")
    return Path(home) if home else Path.home() / ".orbitmq"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description="Run a NameServer and a Broker in one process.")
    add_server_arguments(parser, "broker.conf for anything else")
    parser.add_argument(
        "--port",
        "--namesrv-port",
        dest="port",
        type=port_number,
        default=DEFAULT_NAMESRV_PORT,
        help="nameserver port (default 9876; 0 = free ports)",
    )
    parser.add_argument(
        "--broker-port",
        type=port_number,
        help="broker port (default 10911 + 10 x (--port - 9876): 10911 for 9876, 10921 for 9877; "
        "a free port where that rule leaves the port range, and with --port 0)",
    )
    parser.add_argument(
        "--store", help="store root directory (default $ORBITMQ_HOME/store or ~/.orbitmq/store)"
    )
    parser.add_argument("--flush-disk-type", choices=("SYNC_FLUSH", "ASYNC_FLUSH"), help="flushDiskType")
    parser.add_argument(
        "--console-port", type=port_number, help="serve the web console too (0 = a free port)"
    )
    parser.add_argument(
        "--grpc-port", type=port_number, help="gRPC endpoint for RocketMQ 5.x clients (0 = a free port)"
    )
    parser.add_argument(
        "--brokers",
        type=int,
        default=1,
        help="broker processes (default 1, in this process); N > 1 runs N broker processes "
        "<brokerName>-1..N (own store subdirectory and port each) beside this process's nameserver, "
        "to use more cores",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.brokers <= 64:
        parser.error("--brokers must be between 1 and 64")
    return args


def port_rule(namesrv_port: int) -> int:
    """10911 + 10 x (port - 9876): a second instance on --port 9877 must not collide with the first
    one's broker (10911) or its HA port (10912), so the broker port moves 10 per nameserver port."""
    return DEFAULT_BROKER_PORT + PORT_STEP * (namesrv_port - DEFAULT_NAMESRV_PORT)


def derived_broker_port(namesrv_port: int) -> int:
    """The broker port when only --port is given: the port rule where it gives a usable pair (the
    broker's port and its HA port + 1, both from 1024 to 65535), else 0, a free port. Port 0 means
    free ports for both."""
    port = port_rule(namesrv_port)
    if namesrv_port == 0 or not LOWEST_BROKER_PORT <= port <= 65534:
        return 0
    return port


def broker_port_note(args: argparse.Namespace, from_file: dict[str, str]) -> str | None:
    """The line saying which broker port --port chose, when it is not the default pair's 10911."""
    if args.broker_port is not None or "listenPort" in from_file or args.port in (0, DEFAULT_NAMESRV_PORT):
        return None
    rule = f"{DEFAULT_BROKER_PORT} + {PORT_STEP} x ({args.port} - {DEFAULT_NAMESRV_PORT})"
    port = derived_broker_port(args.port)
    if port:
        return f"{PROG}: broker port {port} follows --port {args.port} ({rule}); set it with --broker-port"
    return (
        f"{PROG}: the broker takes a free port: --port {args.port} gives {port_rule(args.port)} by the "
        f"rule {rule}, outside {LOWEST_BROKER_PORT}-65534; set it with --broker-port"
    )


def build_broker_config(args: argparse.Namespace) -> BrokerConfig:
    """The broker's settings (flags, then -c, then serve's defaults); says which port --port chose."""
    from_file = _conf_file(args)
    config = BrokerConfig.from_properties(broker_properties(args, from_file))
    note = broker_port_note(args, from_file)
    if note:
        print(note, file=sys.stderr)
    if args.config:
        config.broker_config_path = os.path.abspath(args.config)
        config.resolve_beside(args.config)
    if args.metrics_port is not None:
        config.metrics_port = args.metrics_port
    if config.metrics_port >= 0:
        require_ops_extra("--metrics-port (metricsPort)")
    if args.console_port is not None:
        require_ops_extra("--console-port")
    if (config.grpc_server_port if args.grpc_port is None else args.grpc_port) >= 0:
        require_grpc_extra("--grpc-port (grpcServerPort)")
    return config


def _conf_file(args: argparse.Namespace) -> dict[str, str]:
    return parse_properties_text(Path(args.config).read_text(encoding="utf-8")) if args.config else {}


def broker_properties(args: argparse.Namespace, from_file: dict[str, str]) -> dict[str, str]:
    """Precedence: explicit flags, then the -c file's `from_file`, then serve's defaults (which differ
    from a plain broker's: 127.0.0.1, broker-a, port 10911 or 0 with --port 0, store under ~/.orbitmq)."""
    props: dict[str, str] = {
        "brokerName": "broker-a",
        "storePathRootDir": str(default_home() / "store"),
    }
    props.update(from_file)
    props.update({"brokerIP1": HOST, "brokerIP2": HOST})
    if args.broker_port is not None:
        props["listenPort"] = str(args.broker_port)
    elif "listenPort" not in from_file:
        props["listenPort"] = str(derived_broker_port(args.port))
    if args.store:
        props["storePathRootDir"] = args.store
    if args.flush_disk_type:
        props["flushDiskType"] = args.flush_disk_type
    return props


def embedded_namesrv_config(broker_config: BrokerConfig, port: int) -> NamesrvConfig:
    """The nameserver serve runs beside its broker(s): its kvConfig.json beside the store, and the
    broker conf's per-request bounds (serverMax*, registerBrokerMaxInflatedSize), access rules
    (aclEnable/aclFile guard its writes as `orbitmq namesrv` does; the broker signs its registrations)
    and tls.server.* settings (the broker registers over TLS with tls.enable=true)."""
    from orbitmq.namesrv.config import NamesrvConfig
    from orbitmq.transport.limits import LIMIT_KEYS

    config = NamesrvConfig()
    config.listen_port = port
    config.kv_config_path = str(Path(broker_config.store_path_root_dir).parent / "namesrv" / "kvConfig.json")
    for attr in LIMIT_KEYS.values():
        setattr(config, "server_" + attr, getattr(broker_config, "server_" + attr))
    inflated = broker_config.extra.get("registerBrokerMaxInflatedSize")
    if inflated is not None:
        config.update({"registerBrokerMaxInflatedSize": inflated})
    config.acl_enable = broker_config.acl_enable
    config.acl_file = broker_config.acl_file  # already resolved beside -c
    config.extra.update({k: v for k, v in broker_config.extra.items() if k.startswith("tls.server.")})
    return config


async def start_both(run: Startup, args: argparse.Namespace, broker_config: BrokerConfig) -> None:
    """Start the nameserver, then the broker registered with it, then the ops endpoints."""
    from orbitmq.broker.app import BrokerApp
    from orbitmq.broker.recovery_bar import terminal_recovery_bar
    from orbitmq.namesrv.app import NamesrvApp
    from orbitmq.store.dir_lock import check_store_available

    check_store_available(broker_config.store_path_root_dir)  # names the holder of a store in use
    namesrv_config = embedded_namesrv_config(broker_config, args.port)
    namesrv = await run.start(
        NamesrvApp(namesrv_config, host=HOST), ("nameserver", HOST, args.port, "--port")
    )
    broker_config.namesrv_addr = namesrv.address
    if broker_config.acl_enable and not (broker_config.access_key and broker_config.secret_key):
        sign_with_an_admin_account(broker_config)
    broker = BrokerApp(broker_config)
    broker.recovery_progress = terminal_recovery_bar()
    flag = "--broker-port" if args.config is None else "--broker-port (or listenPort in -c)"
    await run.start(broker, ("broker", HOST, broker_config.listen_port, flag))
    run.announce += [
        f"namesrv listening on {namesrv.address}",
        f"broker {broker_config.broker_name} listening on {broker.broker_addr}",
    ]
    grpc_port = broker_config.grpc_server_port if args.grpc_port is None else args.grpc_port
    if grpc_port >= 0:  # RocketMQ 5.x clients' endpoint (orbitmq/proxy)
        from orbitmq.proxy import start_grpc_endpoint

        grpc_endpoint = await start_grpc_endpoint(broker, grpc_port)
        run.on_stop(grpc_endpoint.stop)
        run.announce.append(f"grpc listening on {grpc_endpoint.address}")
    if broker_config.metrics_port >= 0:  # one endpoint for both servers' series
        from orbitmq.broker.metrics import BrokerCollector
        from orbitmq.namesrv.metrics import NamesrvCollector

        collectors = [BrokerCollector(broker), NamesrvCollector(namesrv)]
        await run.start_metrics(collectors, HOST, broker_config.metrics_port)
    if args.console_port is not None:
        from orbitmq.console.app import start_console

        console, url = await start_console(namesrv.address, HOST, args.console_port)
        run.on_stop(console.cleanup)
        run.announce.append(f"console listening on {url}")


def sign_with_an_admin_account(config: BrokerConfig) -> None:
    """serve's broker registers with serve's own nameserver, which with aclEnable=true takes writes only
    when an admin account signed them. Without accessKey/secretKey in the conf the broker signs with the
    first admin account of the same plain_acl.yml (this process reads that file anyway)."""
    from orbitmq.acl.plain_config import load_file

    admin = next((a for a in load_file(Path(config.acl_file)).accounts.values() if a.admin), None)
    if admin is None:
        raise ValueError(
            f"aclEnable=true: {config.acl_file} has no admin account for the broker to sign its "
            "registrations with; add one (admin: true) or set accessKey/secretKey"
        )
    config.access_key, config.secret_key = admin.access_key, admin.secret_key
    logging.getLogger("orbitmq.serve").info(
        "aclEnable=true: the broker signs its registrations with admin account %s", admin.access_key
    )


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.brokers > 1:
        if args.grpc_port is not None:
            print("orbitmq serve: --grpc-port serves one broker, not --brokers N", file=sys.stderr)
            return 2
        from orbitmq import serve_brokers

        configure_logging(args.log_level)
        if read_settings(PROG, lambda: build_broker_config(args)) is None:
            return 2
        props = broker_properties(args, _conf_file(args))
        return serve_brokers.main(args.brokers, args.port, props, args.log_level)
    return server_main(
        PROG,
        args.log_level,
        lambda: build_broker_config(args),
        lambda run, config: start_both(run, args, config),
    )
