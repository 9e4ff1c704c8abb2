"""AclError: a request or an ACL file that the access rules refuse (RocketMQ's AclException)."""

from __future__ import annotations

from orbitmq.common.errors import OrbitError


class AclError(OrbitError):
    """Access refused, or an ACL definition that cannot be used; the text is RocketMQ's."""
