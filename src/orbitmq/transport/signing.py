"""The client side of ACL: an RPC hook that signs every outgoing request (RocketMQ's AclClientRPCHook).

Typed headers are plain ext fields here already, so signing is: add AccessKey (and SecurityToken),
then the Signature over the sorted values and the body (protocol/acl_sign.py).
"""

from __future__ import annotations

from orbitmq.protocol.acl_sign import sign_ext_fields
from orbitmq.protocol.command import RemotingCommand
from orbitmq.transport.client import RpcHook


def request_signer(
    access_key: str | None, secret_key: str | None, security_token: str | None = None
) -> RpcHook | None:
    """The hook that signs with these credentials, or None without an access key."""
    if not access_key:
        return None
    if not secret_key:
        raise ValueError("an access key needs a secret key")
    key, secret = access_key, secret_key

    def sign(request: RemotingCommand) -> None:
        # Callers may have put non-strings (or None) in ext fields; sign what goes on the wire.
        ext: dict[str, object] = request.ext_fields  # type: ignore[assignment]
        for name, value in list(ext.items()):
            if value is None:
                del ext[name]  # not sent, so not signed
            elif not isinstance(value, str):
                ext[name] = str(value).lower() if isinstance(value, bool) else str(value)
        sign_ext_fields(
            request.ext_fields,
            request.body if request.body_parts is None else request.body_bytes(),
            key,
            secret,
            security_token,
        )

    return sign
