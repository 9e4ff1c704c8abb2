"""The store's second wall: a directory named after a topic must stay directly under its root.

Brokers refuse illegal names before they reach the store; this check holds even if one slips through
(a future request code, a tool calling the store directly). It resolves the path (symlinks included)
and refuses anything that is not an immediate child of the resolved root: `..`, separators, NUL, empty.
"""

from __future__ import annotations

import os

from orbitmq.common.errors import StoreError


class UnsafeNameError(StoreError):
    """A name would place a store file outside the store root."""


def child_dir(root: str, name: str) -> str:
    """`root/name`, or UnsafeNameError unless that resolves to a direct child of the resolved root."""
    if not name or name in (".", "..") or "/" in name or "\0" in name or (os.sep != "/" and os.sep in name):
        raise UnsafeNameError(f"name {name[:64]!r} is not a safe directory name under {root}")
    path = os.path.join(root, name)
    if not os.path.islink(path):
        # One plain component under root: it resolves under root whatever root resolves to. (Resolving
        # both paths in full costs an lstat per component, on the event loop, for every new queue.)
        return path
    real_root = os.path.realpath(root)
    if os.path.dirname(os.path.realpath(path)) != real_root:
        raise UnsafeNameError(f"{path} resolves outside the store root {real_root}")
    return path
