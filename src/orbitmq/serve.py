"""`orbitmq serve`: a NameServer and a Broker in one process, the quick start.

    orbitmq serve [--port 9876] [--broker-port 10911] [--store DIR] [--flush-disk-type ASYNC_FLUSH]
                  [-c broker.conf] [--brokers N]

`--brokers N` (N > 1) runs N broker processes beside the nameserver instead (serve_brokers.py).

Both listen on 127.0.0.1. `--port 0` picks free ports for both (unless --broker-port is given). The
store lives in --store, else $ORBITMQ_HOME/store, else ~/.orbitmq/store. The first stdout lines are
`namesrv listening on ...` and `broker NAME listening on ...` (flushed). Ctrl-C or SIGTERM stops both
cleanly (the broker first, so it can unregister).

`--metrics-port PORT` (or metricsPort in the conf; 0 = a free port) serves the broker's and the
nameserver's Prometheus series on one endpoint, `--console-port PORT` the web console; each prints its
`metrics listening on URL` / `console listening on URL` line after the two above (console/embedded.py).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from orbitmq.broker.config import BrokerConfig, parse_properties_text
from orbitmq.common.errors import OrbitError, StoreError

if TYPE_CHECKING:
    from orbitmq.proxy.server import GrpcEndpoint


def default_home() -> Path:
    home = os.environ.get("ORBITMQ_HOME")
    return Path(home) if home else Path.home() / ".orbitmq"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="orbitmq serve", description="Run a NameServer and a Broker in one process."
    )
    parser.add_argument(
        "--port",
        "--namesrv-port",
        dest="port",
        type=int,
        default=9876,
        help="nameserver port (default 9876; 0 = free ports)",
    )
    parser.add_argument(
        "--broker-port",
        type=int,
        help="broker port (default 10911 + 10 x (--port - 9876): 10911 for 9876, 10921 for 9877; "
        "0 with --port 0)",
    )
    parser.add_argument(
        "--store", help="store root directory (default $ORBITMQ_HOME/store or ~/.orbitmq/store)"
    )
    parser.add_argument("--flush-disk-type", choices=("SYNC_FLUSH", "ASYNC_FLUSH"), help="flushDiskType")
    parser.add_argument(
        "--metrics-port", type=int, help="Prometheus endpoint (off unless set; 0 = free port)"
    )
    parser.add_argument("--console-port", type=int, help="serve the web console too (0 = a free port)")
    parser.add_argument(
        "--grpc-port", type=int, help="gRPC endpoint for RocketMQ 5.x clients (0 = a free port)"
    )
    parser.add_argument("-c", "--config", help="broker.conf for anything else (RocketMQ property names)")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
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


DEFAULT_NAMESRV_PORT = 9876
DEFAULT_BROKER_PORT = 10911
PORT_STEP = 10  # broker ports of neighbouring instances 10 apart: room for each one's HA port (+1)


def derived_broker_port(namesrv_port: int) -> int:
    """The broker port when only --port is given: a second instance on --port 9877 must not collide
    with the first one's broker (10911) or its HA port (10912), so the broker port moves with it,
    10 per nameserver port: 10911 + 10 x (port - 9876). Port 0 means free ports for both."""
    if namesrv_port == 0:
        return 0
    port = DEFAULT_BROKER_PORT + PORT_STEP * (namesrv_port - DEFAULT_NAMESRV_PORT)
    if not 1 <= port <= 65534:  # the HA port (port + 1) must exist too
        raise ValueError(
            f"--port {namesrv_port} gives no usable broker port by the rule "
            f"{DEFAULT_BROKER_PORT} + {PORT_STEP} x (port - {DEFAULT_NAMESRV_PORT}) = {port}; "
            "choose the broker port with --broker-port"
        )
    return port


def build_broker_config(args: argparse.Namespace) -> BrokerConfig:
    config = BrokerConfig.from_properties(broker_properties(args))
    if args.config:
        config.broker_config_path = os.path.abspath(args.config)
        config.resolve_beside(args.config)
    return config


def broker_properties(args: argparse.Namespace) -> dict[str, str]:
    """Precedence: explicit flags, then the -c file, then serve's defaults (which differ from a plain
    broker's: 127.0.0.1, broker-a, port 10911 or 0 with --port 0, store under ~/.orbitmq)."""
    from_file = parse_properties_text(Path(args.config).read_text(encoding="utf-8")) if args.config else {}
    props: dict[str, str] = {
        "brokerName": "broker-a",
        "storePathRootDir": str(default_home() / "store"),
    }
    props.update(from_file)
    props.update({"brokerIP1": "127.0.0.1", "brokerIP2": "127.0.0.1"})
    if args.broker_port is not None:
        props["listenPort"] = str(args.broker_port)
    elif "listenPort" not in from_file:
        props["listenPort"] = str(derived_broker_port(args.port))
    if (
        args.broker_port is None
        and "listenPort" not in from_file
        and args.port not in (0, DEFAULT_NAMESRV_PORT)
    ):
        print(
            f"orbitmq serve: broker port {props['listenPort']} follows --port {args.port} "
            f"({DEFAULT_BROKER_PORT} + {PORT_STEP} x ({args.port} - {DEFAULT_NAMESRV_PORT})); "
            "set it with --broker-port",
            file=sys.stderr,
        )
    if args.store:
        props["storePathRootDir"] = args.store
    if args.flush_disk_type:
        props["flushDiskType"] = args.flush_disk_type
    return props


async def serve(args: argparse.Namespace, broker_config: BrokerConfig) -> None:
    from orbitmq.broker.app import BrokerApp
    from orbitmq.broker.recovery_bar import terminal_recovery_bar
    from orbitmq.namesrv.app import NamesrvApp
    from orbitmq.namesrv.config import NamesrvConfig
    from orbitmq.transport import loop
    from orbitmq.transport.limits import LIMIT_KEYS

    namesrv_config = NamesrvConfig()
    namesrv_config.listen_port = args.port
    namesrv_config.kv_config_path = str(
        Path(broker_config.store_path_root_dir).parent / "namesrv" / "kvConfig.json"
    )
    # One conf for both: the per-request bounds (serverMax*) hold for the embedded nameserver too.
    for attr in LIMIT_KEYS.values():
        setattr(namesrv_config, "server_" + attr, getattr(broker_config, "server_" + attr))
    inflated = broker_config.extra.get("registerBrokerMaxInflatedSize")
    if inflated is not None:
        namesrv_config.update({"registerBrokerMaxInflatedSize": inflated})
    # The same access rules for both: aclEnable/aclFile guard the nameserver's writes as `orbitmq namesrv`
    # does (the broker signs its registrations with accessKey/secretKey), and tls.server.* hold for both
    # ports (the broker registers over TLS with tls.enable=true).
    namesrv_config.acl_enable = broker_config.acl_enable
    namesrv_config.acl_file = broker_config.acl_file  # already resolved beside -c
    namesrv_config.extra.update({k: v for k, v in broker_config.extra.items() if k.startswith("tls.server.")})
    namesrv = NamesrvApp(namesrv_config, host="127.0.0.1")
    try:
        await namesrv.start()
    except OSError as exc:
        if exc.errno not in _BIND_ERRORS:
            raise
        raise ListenError(_port_error("nameserver", args.port, "--port", exc)) from None
    broker_config.namesrv_addr = namesrv.address
    if broker_config.acl_enable and not (broker_config.access_key and broker_config.secret_key):
        sign_with_an_admin_account(broker_config)
    broker = BrokerApp(broker_config)
    broker.recovery_progress = terminal_recovery_bar()
    try:
        await broker.start()
    except OSError as exc:
        await namesrv.stop()
        if exc.errno not in _BIND_ERRORS:
            raise
        flag = "--broker-port" if args.config is None else "--broker-port (or listenPort in -c)"
        raise ListenError(_port_error("broker", broker_config.listen_port, flag, exc)) from None
    except BaseException:
        await namesrv.stop()
        raise
    from orbitmq.console.embedded import OpsEndpoints
    from orbitmq.proxy import start_grpc_endpoint

    grpc_endpoint: GrpcEndpoint | None = None
    ops = OpsEndpoints()
    metrics_port = broker_config.metrics_port if args.metrics_port is None else args.metrics_port
    try:
        grpc_port = broker_config.grpc_server_port if args.grpc_port is None else args.grpc_port
        if grpc_port >= 0:
            grpc_endpoint = await start_grpc_endpoint(broker, grpc_port)
        await ops.start(
            broker=broker,
            namesrv=namesrv,
            host="127.0.0.1",
            metrics_port=metrics_port,
            console_port=args.console_port,
        )
        await loop.wait_for_stop_signal(
            [
                f"namesrv listening on {namesrv.address}",
                f"broker {broker_config.broker_name} listening on {broker.broker_addr}",
                *([f"grpc listening on {grpc_endpoint.address}"] if grpc_endpoint is not None else []),
                *ops.announce,
            ]
        )
    finally:
        try:
            await ops.stop()
            if grpc_endpoint is not None:
                await grpc_endpoint.stop()
            await broker.stop()
        finally:
            await namesrv.stop()


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


_BIND_ERRORS = (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES)


class ListenError(Exception):
    """A port could not be bound; the message names the flag that chooses another."""


def _port_error(what: str, port: int, flag: str, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"{what} port {port} is already in use (another orbitmq serve?); choose another with {flag}"
    return f"{what} cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}"


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        broker_config = build_broker_config(args)
    except (OSError, ValueError) as exc:
        print(f"orbitmq serve: {exc}", file=sys.stderr)
        return 2
    from orbitmq.store.dir_lock import check_store_available

    if args.brokers > 1:
        if args.grpc_port is not None:
            print("orbitmq serve: --grpc-port serves one broker, not --brokers N", file=sys.stderr)
            return 2
        from orbitmq import serve_brokers

        return serve_brokers.main(args.brokers, args.port, broker_properties(args), args.log_level)
    from orbitmq.transport import loop

    try:
        check_store_available(broker_config.store_path_root_dir)
        loop.run(serve(args, broker_config))
    except (OSError, ListenError, StoreError) as exc:
        # one line the user can act on (which store, which port, which flag), not a traceback
        print(f"orbitmq serve: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OrbitError) as exc:  # found at startup: the ACL file, TLS settings
        print(f"orbitmq serve: {exc}", file=sys.stderr)
        return 2
    return 0
