"""orbitmq: a RocketMQ-architecture message queue in Python.

The blocking client facade (`Producer`, `PushConsumer`, `LitePullConsumer`, `Message`) is exported
lazily so that `import orbitmq` stays cheap for the servers and the CLI.
"""

from __future__ import annotations

from typing import Any

# Decides, before any hot module is imported, whether the mypyc-compiled build or the pure Python
# sources run (ORBITMQ_PURE=1, or sources edited after the build, mean pure; see native.py).
from orbitmq import native as _native  # noqa: F401 -- imported for its effect

__version__ = "0.1.0"

_LAZY = {
    "Message": "orbitmq.message.model",
    "MessageExt": "orbitmq.message.model",
    "MessageQueue": "orbitmq.message.model",
    "NamesrvUnreachableError": "orbitmq.client.api",
    "Producer": "orbitmq.client.blocking",
    "PushConsumer": "orbitmq.client.blocking",
    "LitePullConsumer": "orbitmq.client.blocking",
    "TransactionProducer": "orbitmq.client.blocking",
    "MessageSelector": "orbitmq.client.blocking",
}

__all__ = [
    "LitePullConsumer",
    "Message",
    "MessageExt",
    "MessageQueue",
    "MessageSelector",
    "NamesrvUnreachableError",
    "Producer",
    "PushConsumer",
    "TransactionProducer",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'orbitmq' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
