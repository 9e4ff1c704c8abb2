"""The layer contract: imports point down only, and the sans-IO layers never touch asyncio or sockets.

Parses every module under src/orbitmq with `ast` (nothing is imported), so a violation is reported
even in code no other test exercises.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "orbitmq"

# Lowest first. A module may import its own component and any component of a lower level; components
# on the same level are independent of each other.
LEVELS: list[set[str]] = [
    {"common", "native"},  # native: which build runs (compiled or pure), decided before any import
    {"message"},
    {"protocol"},
    {"store", "transport", "acl"},
    # proxy: the gRPC endpoint for 5.x clients; it sees the broker through its own protocols (backend.py),
    # so both broker entry points can start it. controller: RIP-44's controller (the nameserver may embed it)
    {"replication", "proxy", "controller"},
    {"namesrv", "broker", "client"},
    {"admin", "testing"},
    {"console"},  # the web console and serve's ops endpoints: above admin, beside nothing
    {"spark"},
    {"bench"},  # measures everything below it, the Spark connector included
    {"cli", "serve", "serve_brokers", "config_doc", "__main__", "__init__"},
]
# The entry points (top level) may use each other; every other level's components are independent.
TOP_LEVEL = len(LEVELS) - 1
LEVEL_OF = {component: i for i, level in enumerate(LEVELS) for component in level}

# Pure layers: bytes in, values out; the store is a synchronous library.
NO_IO_COMPONENTS = {"common", "message", "protocol", "store", "acl"}
IO_MODULES = {"asyncio", "socket", "selectors", "ssl", "uvloop", "socketserver"}


def component_of(rel: Path) -> str:
    return rel.parts[0].removesuffix(".py")


def imported_modules(tree: ast.AST, rel: Path) -> list[tuple[str, int]]:
    """Absolute names of everything the module imports, with line numbers (relative imports resolved)."""
    package_parts = ["orbitmq", *rel.parts[:-1]]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((name, node.lineno))
    return found


def violations(src: Path = SRC) -> list[str]:
    problems: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        component = component_of(rel)
        level = LEVEL_OF.get(component)
        if level is None:
            problems.append(f"{rel}: component {component!r} has no level in LEVELS")
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, line in imported_modules(tree, rel):
            top = name.split(".")[0]
            where = f"{rel}:{line}"
            if component in NO_IO_COMPONENTS and top in IO_MODULES:
                problems.append(f"{where}: {component} must not import {name} (sans-IO layer)")
            if top != "orbitmq" or name == "orbitmq":
                continue
            target = name.split(".")[1]
            if target == component:
                continue
            target_level = LEVEL_OF.get(target)
            if target_level is None:
                problems.append(f"{where}: imports unknown component {name}")
            elif target_level > level or (target_level == level and level != TOP_LEVEL):
                problems.append(f"{where}: {component} (level {level}) imports {name} (level {target_level})")
    return problems


def test_imports_point_down_only() -> None:
    problems = violations()
    assert not problems, "layer contract broken:\n" + "\n".join(problems)


def test_checker_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself must be able to fail: a store module importing the broker is reported."""
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "__layer_probe__.py").write_text(
        "from orbitmq.broker import app\nimport asyncio\nfrom ..message import codec\n", encoding="utf-8"
    )
    (tmp_path / "broker").mkdir()
    (tmp_path / "broker" / "ok.py").write_text("from ..store import x\nfrom orbitmq.store import y\n")
    problems = violations(tmp_path)
    assert any("__layer_probe__" in p and "orbitmq.broker" in p for p in problems)
    assert any("__layer_probe__" in p and "asyncio" in p for p in problems)
    assert len(problems) == 2, problems  # the downward imports are fine


@pytest.mark.parametrize("component", sorted(LEVEL_OF))
def test_every_level_component_exists_or_is_a_module(component: str) -> None:
    assert (SRC / component).is_dir() or (SRC / f"{component}.py").exists() or component == "serve"


# BrokerApp wires up the broker's parts; the parts see it only through broker/context.py's
# BrokerContext, so app.py and its processors/services form no import circle (not even for typing).
BROKER_PARTS = ("broker/processors", "broker/services", "broker/transaction", "broker/context.py")


def broker_parts_importing_app(src: Path = SRC) -> list[str]:
    problems: list[str] = []
    for part in BROKER_PARTS:
        root = src / part
        paths = [root] if root.suffix == ".py" else sorted(root.rglob("*.py"))
        for path in paths:
            if not path.exists():
                continue
            rel = path.relative_to(src)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for name, line in imported_modules(tree, rel):
                if name == "orbitmq.broker.app" or name.startswith("orbitmq.broker.app."):
                    problems.append(f"{rel}:{line}: imports {name} (use orbitmq.broker.context)")
                elif name == "orbitmq.broker" and _imports_name(tree, line, "app"):
                    problems.append(f"{rel}:{line}: imports orbitmq.broker.app (use orbitmq.broker.context)")
    return problems


def _imports_name(tree: ast.AST, line: int, wanted: str) -> bool:
    return any(
        isinstance(node, ast.ImportFrom) and node.lineno == line and any(a.name == wanted for a in node.names)
        for node in ast.walk(tree)
    )


def test_broker_parts_do_not_import_the_app() -> None:
    problems = broker_parts_importing_app()
    assert not problems, "broker parts import BrokerApp back:\n" + "\n".join(problems)


def test_app_import_checker_can_fail(tmp_path: Path) -> None:
    """Every spelling of importing broker.app back is reported, under TYPE_CHECKING too."""
    for sub in ("processors", "services", "transaction"):
        (tmp_path / "broker" / sub).mkdir(parents=True)
    (tmp_path / "broker" / "processors" / "p.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from orbitmq.broker.app import BrokerApp\n"
    )
    (tmp_path / "broker" / "services" / "s.py").write_text("from .. import app\n")
    (tmp_path / "broker" / "transaction" / "t.py").write_text("import orbitmq.broker.app\n")
    (tmp_path / "broker" / "processors" / "ok.py").write_text(
        "from orbitmq.broker.context import BrokerContext\n"
    )
    problems = broker_parts_importing_app(tmp_path)
    assert sorted(p.split(":")[0] for p in problems) == [
        "broker/processors/p.py",
        "broker/services/s.py",
        "broker/transaction/t.py",
    ], problems
