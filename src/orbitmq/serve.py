"""`orbitmq serve`: a NameServer and a Broker in one process, the quick start.

    orbitmq serve [--port 9876] [--broker-port 10911] [--store DIR] [--flush-disk-type ASYNC_FLUSH]
                  [-c broker.conf] [--brokers N]

`--brokers N` (N > 1) runs N broker processes beside the nameserver instead (serve_brokers.py).

Both listen on 127.0.0.1. `--port 0` picks free ports for both (unless --broker-port is given). The
store lives in --store, else $ORBITMQ_HOME/store, else ~/.orbitmq/store. The first stdout lines are
`namesrv listening on ...` and `broker NAME listening on ...` (flushed). Ctrl-C or SIGTERM stops both
cleanly (the broker first, so it can unregister).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from orbitmq.broker.config import BrokerConfig, parse_properties_text


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
    parser.add_argument("--broker-port", type=int, help="broker port (default 10911, or 0 with --port 0)")
    parser.add_argument(
        "--store", help="store root directory (default $ORBITMQ_HOME/store or ~/.orbitmq/store)"
    )
    parser.add_argument("--flush-disk-type", choices=("SYNC_FLUSH", "ASYNC_FLUSH"), help="flushDiskType")
    parser.add_argument("-c", "--config", help="broker.conf for anything else (RocketMQ property names)")
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
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


def build_broker_config(args: argparse.Namespace) -> BrokerConfig:
    return BrokerConfig.from_properties(broker_properties(args))


def broker_properties(args: argparse.Namespace) -> dict[str, str]:
    """Precedence: explicit flags, then the -c file, then serve's defaults (which differ from a plain
    broker's: 127.0.0.1, broker-a, port 10911 or 0 with --port 0, store under ~/.orbitmq)."""
    from_file = parse_properties_text(Path(args.config).read_text(encoding="utf-8")) if args.config else {}
    props: dict[str, str] = {
        "brokerName": "broker-a",
        "listenPort": "0" if args.port == 0 else "10911",
        "storePathRootDir": str(default_home() / "store"),
    }
    props.update(from_file)
    props.update({"brokerIP1": "127.0.0.1", "brokerIP2": "127.0.0.1"})
    if args.broker_port is not None:
        props["listenPort"] = str(args.broker_port)
    if args.store:
        props["storePathRootDir"] = args.store
    if args.flush_disk_type:
        props["flushDiskType"] = args.flush_disk_type
    return props


async def serve(args: argparse.Namespace, broker_config: BrokerConfig) -> None:
    from orbitmq.broker.app import BrokerApp
    from orbitmq.namesrv.app import NamesrvApp
    from orbitmq.namesrv.config import NamesrvConfig
    from orbitmq.transport import loop

    namesrv_config = NamesrvConfig()
    namesrv_config.listen_port = args.port
    namesrv_config.kv_config_path = str(
        Path(broker_config.store_path_root_dir).parent / "namesrv" / "kvConfig.json"
    )
    namesrv = NamesrvApp(namesrv_config, host="127.0.0.1")
    await namesrv.start()
    broker_config.namesrv_addr = namesrv.address
    broker = BrokerApp(broker_config)
    try:
        await broker.start()
    except BaseException:
        await namesrv.stop()
        raise
    try:
        await loop.wait_for_stop_signal(
            [
                f"namesrv listening on {namesrv.address}",
                f"broker {broker_config.broker_name} listening on {broker.broker_addr}",
            ]
        )
    finally:
        try:
            await broker.stop()
        finally:
            await namesrv.stop()


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
    if args.brokers > 1:
        from orbitmq import serve_brokers

        return serve_brokers.main(args.brokers, args.port, broker_properties(args), args.log_level)
    from orbitmq.transport import loop

    try:
        loop.run(serve(args, broker_config))
    except OSError as exc:
        print(f"orbitmq serve: {exc}", file=sys.stderr)
        return 1
    return 0
