"""TransactionProducer spells out every Producer option (mypyc, which compiles both, mis-passes a
forwarded **options dict): the two signatures and the forwarding call must stay equal. Read from the
sources, so the check is the same for the compiled and the pure build."""

from __future__ import annotations

import ast
from pathlib import Path

import orbitmq.client

CLIENT = Path(orbitmq.client.__file__).parent


def _init(module: str, cls: str) -> ast.FunctionDef:
    tree = ast.parse((CLIENT / module).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return item
    raise AssertionError(f"no {cls}.__init__ in {module}")


def _options(fn: ast.FunctionDef) -> list[tuple[str, str, str]]:
    """(name, annotation, default) of each keyword-only parameter, as written."""
    args = fn.args
    return [
        (a.arg, ast.unparse(a.annotation) if a.annotation else "", ast.unparse(d) if d else "")
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]


def test_transaction_producer_takes_and_forwards_every_producer_option() -> None:
    producer = _options(_init("producer.py", "Producer"))
    tx_init = _init("transaction_producer.py", "TransactionProducer")
    assert [o for o in _options(tx_init) if o[0] != "listener"] == producer
    assert tx_init.args.vararg is None and tx_init.args.kwarg is None
    calls = [
        n
        for n in ast.walk(tx_init)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "__init__"
    ]
    assert len(calls) == 1
    forwarded = [(k.arg, ast.unparse(k.value)) for k in calls[0].keywords]
    assert forwarded == [(name, name) for name, _, _ in producer]
