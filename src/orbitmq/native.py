"""Which build of orbitmq is running: mypyc-compiled hot modules, or pure Python.

The Python sources are the one source of truth. `pip install .` (and the editable install of
scripts/install-dev) compiles the modules in `COMPILED_MODULES` with mypyc when a C compiler is there
(setup.py); the extension files sit next to their `.py` and Python's import system prefers them.

Pure Python is used instead (the whole package, never a mix: compiled modules of one build call each
other's native classes directly) when
- `ORBITMQ_PURE=1` is set (CI runs the protocol, store and client unit tests a second time this way), or
- in a source checkout (src/ beside setup.py: the editable install), a compiled module's `.py` is newer
  than its extension (an edited source after a build: the edit wins, with one notice on stderr; rebuild
  with `python setup.py build_ext --inplace` or `pip install -e .`). An installed wheel is never
  "stale": pip writes its files in any order, so their times say nothing.

This module must stay importable without compiling (setup.py reads it) and never be compiled itself.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

# The hot path, compiled together as one mypyc group (order does not matter). mypyc differences to keep
# in mind in these modules: tuples and ints are unboxed (compare values, never identity of a tuple read
# back from a container), and compiled classes cannot be monkeypatched or subclassed by tests.
COMPILED_MODULES: tuple[str, ...] = (
    "orbitmq.common.clock",
    "orbitmq.protocol.frames",
    "orbitmq.protocol.header_encode",
    "orbitmq.protocol.command",
    "orbitmq.protocol.name_guard",
    "orbitmq.protocol.send_reply",
    "orbitmq.message.record_layout",
    "orbitmq.message.record",
    "orbitmq.message.record_decode",
    "orbitmq.message.property_string",
    "orbitmq.message.hashing",
    "orbitmq.message.ids",
    "orbitmq.message.batch_scan",
    "orbitmq.store.store_message",
    "orbitmq.store.results",
    "orbitmq.store.stats",
    "orbitmq.store.mapped_file",
    "orbitmq.store.segment_queue",
    "orbitmq.store.flush_wanted",
    "orbitmq.store.commit_log",
    "orbitmq.store.consume_queue",
    "orbitmq.store.consume_queue_table",
    "orbitmq.store.dispatch",
    "orbitmq.store.index_file",
    "orbitmq.store.key_index",
    "orbitmq.store.batch_append",
    "orbitmq.store.reads",
    "orbitmq.store.store_reads",
    "orbitmq.store.store_upkeep",
    "orbitmq.store.message_store",
    "orbitmq.transport.busy_poll",
    "orbitmq.transport.connection",
    "orbitmq.transport.pending",
    "orbitmq.transport.dispatch",
    "orbitmq.broker.processors.fields",
    "orbitmq.broker.processors.pull",
    "orbitmq.broker.processors.send",
    "orbitmq.broker.processors.send_request",
    "orbitmq.broker.processors.flush_waits",
    "orbitmq.broker.stats",
    "orbitmq.broker.long_polling",
    # the producer's send path; TransactionProducer subclasses Producer, so both are compiled
    "orbitmq.client.consume",
    "orbitmq.client.consumer_stats",
    "orbitmq.client.process_queue",
    "orbitmq.client.direct_send",
    "orbitmq.client.producer",
    "orbitmq.client.transaction_producer",
    "orbitmq.client.send_path",
    "orbitmq.client.send_request",
    "orbitmq.client.send_result",
    "orbitmq.client.routing",
    "orbitmq.message.validation",
    "orbitmq.transport.client",
)

PURE_ENV = "ORBITMQ_PURE"
_SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def in_source_checkout(src_dir: str) -> bool:
    """True for the repository's src/ (an editable install), False for site-packages."""
    return os.path.basename(src_dir) == "src" and os.path.exists(
        os.path.join(os.path.dirname(src_dir), "setup.py")
    )


def _source(module: str) -> str:
    return os.path.join(_SRC, *module.split(".")) + ".py"


def _extension(module: str) -> str | None:
    base = os.path.join(_SRC, *module.split("."))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if os.path.exists(base + suffix):
            return base + suffix
    return None


def _decide() -> tuple[str, str]:
    """(mode, reason): mode is "compiled" or "pure"."""
    built = [(m, _extension(m)) for m in COMPILED_MODULES]
    present = [(m, ext) for m, ext in built if ext is not None]
    if not present:
        return "pure", "no compiled modules (built without mypyc or a C compiler)"
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return "pure", f"{PURE_ENV} is set"
    if len(present) < len(built):
        missing = [m for m, ext in built if ext is None]
        return "pure", f"incomplete build (no extension for {missing[0]})"
    for module, ext in present if in_source_checkout(_SRC) else ():
        try:
            if os.path.getmtime(_source(module)) > os.path.getmtime(ext):
                return "pure", f"{module}'s source is newer than its compiled module (rebuild)"
        except OSError:
            continue
    return "compiled", f"{len(present)} modules compiled with mypyc"


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Loads the compiled modules from their `.py` files (pure mode)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = frozenset(names)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        source = _source(fullname)
        if not os.path.exists(source):
            return None
        return importlib.util.spec_from_file_location(fullname, source)


MODE, REASON = _decide()
if MODE == "pure" and any(_extension(m) for m in COMPILED_MODULES):
    sys.meta_path.insert(0, _SourceFirst(COMPILED_MODULES))
    if os.environ.get(PURE_ENV, "") in ("", "0"):
        print(f"orbitmq: using pure Python: {REASON}", file=sys.stderr)


def describe() -> str:
    """One line for `orbitmq --version`."""
    return f"{MODE} ({REASON})"
