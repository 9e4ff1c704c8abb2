"""The subcommand registry of `orbitmq admin`: each subcommand declares its mqadmin flags and an async
runner that returns a `Report` (text for people, data for `--json`).

Subcommand modules (`topic_commands`, `message_commands`) register themselves with `@command`;
`cli` builds the argument parser from `COMMANDS`. Nothing here talks to the network.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orbitmq.admin.api import AdminClient


@dataclass(slots=True)
class Report:
    """What a subcommand prints: `text` normally, `data` as JSON with --json."""

    text: str
    data: Any


Runner = Callable[["AdminClient", argparse.Namespace], Awaitable[Report]]
Configure = Callable[[argparse.ArgumentParser], None]


@dataclass(slots=True, frozen=True)
class Command:
    name: str
    help: str
    configure: Configure
    run: Runner
    namesrv: bool = True  # False: runs without a name server (the controller's verbs)


COMMANDS: dict[str, Command] = {}


def command(
    name: str, help: str, configure: Configure, *, namesrv: bool = True
) -> Callable[[Runner], Runner]:
    """Register the decorated runner as subcommand `name` (mqadmin's spelling); `namesrv=False` when it
    can run without -n."""

    def register(run: Runner) -> Runner:
        if name in COMMANDS:
            raise ValueError(f"duplicate admin subcommand {name}")
        COMMANDS[name] = Command(name, help, configure, run, namesrv)
        return run

    return register


def parse_bool(text: str) -> bool:
    """mqadmin's boolean option values: true/false (also yes/no, 1/0)."""
    value = text.strip().lower()
    if value in ("true", "yes", "1"):
        return True
    if value in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got 0")
    return value


def broker_or_cluster(
    parser: argparse.ArgumentParser, *, broker_help: str = "broker address ip:port"
) -> None:
    parser.add_argument("-b", "--brokerAddr", dest="broker_addr", help=broker_help)
    parser.add_argument("-c", "--clusterName", dest="cluster", help="cluster name (every master of it)")


def topic_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("-t", "--topic", required=required, help="topic name")


def group_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "-g", "--groupName", "--consumerGroup", dest="group", required=required, help="group name"
    )
