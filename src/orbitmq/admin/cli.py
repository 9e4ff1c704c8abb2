"""`orbitmq admin SUBCOMMAND [options]`: mqadmin's subcommands and flags over AdminClient.

Output goes to stdout; a failure prints one line `orbitmq admin NAME: error: ...` on stderr and exits
1 (2 for bad arguments, as argparse), never a traceback for anything the user or the cluster got wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import sys
from collections.abc import Sequence

from orbitmq.admin import (
    acl_commands,
    controller_commands,
    group_commands,
    message_commands,
    stats_commands,
    topic_commands,
    watch_command,
)
from orbitmq.admin.api import AdminClient, AdminError
from orbitmq.admin.registry import COMMANDS, Command, Report
from orbitmq.admin.table import to_json_text
from orbitmq.common.errors import BrokerError, ClientError, ConnectError, OrbitError, RequestTimeoutError
from orbitmq.protocol.codes import ResponseCode

# Imported for their @command registrations.
_SUBCOMMAND_MODULES = (
    topic_commands,
    controller_commands,
    group_commands,
    message_commands,
    acl_commands,
    stats_commands,
    watch_command,
)

PROG = "orbitmq admin"


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so main() returns the code (usable in-process)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(self, message)

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


class _UsageError(Exception):
    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def add_security_options(parser: argparse.ArgumentParser) -> None:
    """--access-key/--secret-key (ACL signing, or the ORBITMQ_* variables) and --tls: every tool that talks
    to a cluster (orbitmq admin, orbitmq console) takes the same three."""
    parser.add_argument(
        "--access-key",
        default=os.environ.get("ORBITMQ_ACCESS_KEY"),
        help="ACL access key: sign every request (or ORBITMQ_ACCESS_KEY)",
    )
    parser.add_argument(
        "--secret-key",
        default=os.environ.get("ORBITMQ_SECRET_KEY"),
        help="ACL secret key (or ORBITMQ_SECRET_KEY; prefer the variable: flags show in ps)",
    )
    parser.add_argument("--tls", action="store_true", help="connect with TLS (tls.enable=true)")


USAGE_LINE = f"{PROG} SUBCOMMAND [-n NAMESRV] [--json] [options]   ({PROG} SUBCOMMAND -h for its options)"


def usage() -> str:
    """The usage line and the list of subcommands (what `orbitmq admin` with no subcommand prints)."""
    width = max(len(name) for name in COMMANDS)
    lines = [
        f"usage: {USAGE_LINE}",
        "",
        "subcommands (mqadmin's names and flags):",
    ]
    lines += [f"  {name.ljust(width)}  {cmd.help}" for name, cmd in COMMANDS.items()]
    return "\n".join(lines)


def did_you_mean(word: str) -> str:
    """ " (did you mean 'updateTopic'?)" for a mistyped subcommand, "" when nothing is close; letter case
    is ignored (mqadmin's names are camelCase and easy to mis-capitalize)."""
    by_lower = {name.lower(): name for name in COMMANDS}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(by_lower[c]) for c in close) + "?)"


def _common_options() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument(
        "-n",
        "--namesrvAddr",
        dest="namesrv",
        help="name server address(es) ip:port, ';'-separated (or NAMESRV_ADDR)",
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of tables")
    common.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each request (5)")
    add_security_options(common)
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = _Parser(prog=PROG, usage=USAGE_LINE, add_help=False)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help, parents=[common], prog=f"{PROG} {name}")
        cmd.configure(p)
    return parser


def subcommand_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one subcommand (its flags and the common ones); KeyError for an unknown name."""
    cmd = COMMANDS[name]
    parser = _Parser(prog=f"{PROG} {name}", description=cmd.help, parents=[_common_options()])
    cmd.configure(parser)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse a command line; raises _UsageError/_Exit (main turns them into exit codes).

    The subcommand's own parser reads its flags, so an unknown flag is reported with that
    subcommand's usage (the top parser would answer with the whole list of subcommands)."""
    argv = list(argv)
    if not argv or argv[0] not in COMMANDS:
        return build_parser().parse_args(argv)
    args = subcommand_parser(argv[0]).parse_args(argv[1:])
    args.command = argv[0]
    return args


def error_text(exc: BaseException) -> str:
    """One line for the user: what failed and, for response codes, the code's name."""
    if isinstance(exc, BrokerError):
        try:
            name = ResponseCode(exc.code).name
        except ValueError:
            name = "UNKNOWN"
        where = "the name server" if exc.address in (None, "namesrv") else exc.address
        remark = (exc.remark or "").strip().splitlines()[0] if exc.remark else "no remark"
        return f"{where} answered {name} ({exc.code}): {remark}"
    if isinstance(exc, ConnectError):
        return f"unreachable: {exc}"
    if isinstance(exc, RequestTimeoutError):
        return f"timed out: {exc or 'no response in time'}"
    return str(exc) or type(exc).__name__


async def run_command(cmd: Command, args: argparse.Namespace) -> Report:
    if args.access_key and not args.secret_key:
        raise ClientError("--access-key needs --secret-key (or ORBITMQ_SECRET_KEY)")
    async with AdminClient(
        args.namesrv,
        require_namesrv=cmd.namesrv,
        timeout=args.timeout,
        access_key=args.access_key,
        secret_key=args.secret_key,
        tls=args.tls,
    ) as admin:
        return await cmd.run(admin, args)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand, e.g. `updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t TopicA -r 4 -w 4`.

    Every subcommand takes -n (name servers, ';'-separated; default $NAMESRV_ADDR), --json (machine
    output) and --timeout (seconds per request); against a cluster with ACL on, --access-key and
    --secret-key (or ORBITMQ_ACCESS_KEY / ORBITMQ_SECRET_KEY) sign every request; --tls uses TLS.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # a subcommand is required: the list, and argparse's exit code for a usage error
        print(f"{usage()}\n\n{PROG}: error: name a subcommand", file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if argv[0] not in COMMANDS:
        print(f"{PROG}: unknown subcommand {argv[0]!r}{did_you_mean(argv[0])}\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        args = parse_args(argv)
    except _UsageError as exc:
        print(exc.parser.format_usage().rstrip(), file=sys.stderr)
        print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except _Exit as exc:
        return exc.status
    cmd = COMMANDS[args.command]
    if _loop_running():
        raise RuntimeError(
            "orbitmq.admin.cli.main() runs its own event loop: call AdminClient from async code"
        )
    try:
        report = asyncio.run(run_command(cmd, args))
    except (OrbitError, OSError) as exc:  # AdminError, ClientError, BrokerError, Connect/Timeout
        print(f"{PROG} {cmd.name}: error: {error_text(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG} {cmd.name}: interrupted", file=sys.stderr)
        return 130
    print(to_json_text(report.data) if args.json else report.text)
    return 0


__all__ = ["AdminError", "ClientError", "build_parser", "error_text", "main", "parse_args", "usage"]

if __name__ == "__main__":
    sys.exit(main())
