"""Fixtures from orbitmq.testing.fixtures, imported as any conftest would."""

from orbitmq.testing.fixtures import namesrv, remoting_client  # noqa: F401
