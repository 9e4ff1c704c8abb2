"""The `orbitmq` command: one entry point, one verb per component.

Each verb lives in its own module exposing `main(argv: list[str]) -> int`; this module imports only
the verb that runs, so `orbitmq --help` and the servers start without loading the other layers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from orbitmq import __version__

# verb -> (module path, one-line description)
VERBS: dict[str, tuple[str, str]] = {
    "serve": ("orbitmq.serve", "run an embedded NameServer and Broker (the quick start)"),
    "namesrv": ("orbitmq.namesrv.main", "run a NameServer"),
    "broker": ("orbitmq.broker.main", "run a Broker from a RocketMQ broker.conf"),
    "controller": ("orbitmq.controller.main", "run a controller (RocketMQ 5's controller mode, failover)"),
    "admin": ("orbitmq.admin.cli", "administer a cluster (mqadmin's verbs: updateTopic, topicList, ...)"),
    "console": ("orbitmq.console.main", "serve the web console (cluster, topics, groups, lag, messages)"),
    "bench": ("orbitmq.bench.cli", "benchmark orbitmq (or any RocketMQ 4.x cluster) and its peers"),
}
# Verbs that cannot run without the ops extra: checked before the verb's module loads.
NEEDS_OPS = frozenset({"console"})


def usage() -> str:
    width = max(len(v) for v in VERBS)
    lines = [
        f"orbitmq {__version__}: a RocketMQ-compatible message queue in Python",
        "",
        "usage: orbitmq VERB [options]   (orbitmq VERB --help for a verb's options)",
        "       orbitmq --version        (the version and whether the compiled modules run)",
        "",
        "verbs:",
    ]
    lines += [f"  {verb.ljust(width)}  {desc}" for verb, (_, desc) in VERBS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] in ("-V", "--version"):
        from orbitmq import native

        print(f"orbitmq {__version__} {native.describe()}")
        return 0
    verb, rest = args[0], args[1:]
    entry = VERBS.get(verb)
    if entry is None:
        print(f"orbitmq: unknown verb {verb!r}\n\n{usage()}", file=sys.stderr)
        return 2
    if verb in NEEDS_OPS:
        from orbitmq.transport.startup import require_ops_extra

        try:
            require_ops_extra(f"the {verb}")
        except ValueError as exc:
            print(f"orbitmq {verb}: {exc}", file=sys.stderr)
            return 2
    module = importlib.import_module(entry[0])
    result: int = module.main(rest)
    return result


if __name__ == "__main__":
    sys.exit(main())
