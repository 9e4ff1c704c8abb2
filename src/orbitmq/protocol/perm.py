"""Topic and broker permission bits (RocketMQ's PermName), as `perm` carries them in TopicConfig, in a
route's QueueData and in `brokerPermission`. Defined once here for the broker, the nameserver, the
clients and the Spark connector.

Literal `Final`s: compiled modules inline them."""

from __future__ import annotations

from typing import Final

PERM_PRIORITY: Final = 8
PERM_READ: Final = 4
PERM_WRITE: Final = 2
PERM_INHERIT: Final = 1
PERM_READ_WRITE: Final = 6  # PERM_READ | PERM_WRITE: what a topic created for the broker's own use gets


def is_readable(perm: int) -> bool:
    return perm & PERM_READ == PERM_READ


def is_writeable(perm: int) -> bool:
    return perm & PERM_WRITE == PERM_WRITE


def is_inherited(perm: int) -> bool:
    return perm & PERM_INHERIT == PERM_INHERIT


def perm_text(perm: int) -> str:
    """The bits as mqadmin prints them (PermName.perm2String): R, W, X (inherit) or - each."""
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )
