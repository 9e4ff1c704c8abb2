"""BlockingAdminClient: AdminClient's methods as plain blocking calls, for scripts and notebooks.

Runs a private event loop in the calling thread (asyncio.Runner); do not use it from inside a
running event loop (use AdminClient there).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from orbitmq.admin.api import AdminClient


class BlockingAdminClient:
    """`with BlockingAdminClient("127.0.0.1:9876") as admin: admin.topic_list()`."""

    def __init__(
        self, namesrv_addrs: str | Sequence[str] | None = None, *, timeout: float = 5.0, **options: Any
    ) -> None:
        self._runner = asyncio.Runner()
        self._admin = self._runner.run(self._create(namesrv_addrs, timeout, options))

    @staticmethod
    async def _create(
        namesrv_addrs: str | Sequence[str] | None, timeout: float, options: dict[str, Any]
    ) -> AdminClient:
        """`options`: AdminClient's keywords (access_key, secret_key, security_token, tls)."""
        return AdminClient(namesrv_addrs, timeout=timeout, **options)

    @property
    def aio(self) -> AdminClient:
        return self._admin

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._admin, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._runner.run(attr(*args, **kwargs))

        return call

    def close(self) -> None:
        try:
            self._runner.run(self._admin.close())
        finally:
            self._runner.close()

    def __enter__(self) -> BlockingAdminClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["BlockingAdminClient"]
