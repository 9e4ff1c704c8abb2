"""orbitmq.acl: RocketMQ 4.x plain ACL (plain_acl.yml accounts, signatures, permissions), sans-IO apart
from reading and writing its own file. Used by the broker and the nameserver as a request hook.

Public API: `PlainAccessValidator`, `AclError`, `AccessPolicy`.
"""

from orbitmq.acl.errors import AclError
from orbitmq.acl.validator import AccessPolicy, PlainAccessValidator

__all__ = ["AccessPolicy", "AclError", "PlainAccessValidator"]
