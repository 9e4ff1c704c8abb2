"""RocketMQ 4.x ACL request signatures (AclClientRPCHook / AclUtils, fact sheet 9.3).

The signed content is the values (never the keys) of every ext field except `Signature`, in the order
of their keys as Java's `String.compareTo` sorts them (UTF-16 code units), UTF-8 encoded, followed by
the raw body; the signature is HMAC-SHA1 keyed with the secret key's UTF-8 bytes, standard Base64.

`_UNIQUE_KEY_QUERY` is left out of what a server checks (PlainAccessValidator.parse) but the Java client
signs it (apache/rocketmq #5310): `sign_request` leaves it out so orbitmq's requests pass RocketMQ's
check, and a server may accept either content (`signature_contents`).
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Iterator, Mapping

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"

Buffer = bytes | bytearray | memoryview


def _java_order(key: str) -> bytes:
    # String.compareTo compares UTF-16 code units; big-endian UTF-16 bytes sort the same way.
    return key.encode("utf-16-be", "surrogatepass")


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def signature_content(
    ext_fields: Mapping[str, object], body: Buffer = b"", *, exclude: frozenset[str] = frozenset()
) -> bytes:
    """The bytes that are signed: sorted ext values (minus Signature and `exclude`) + body."""
    keys = [k for k, v in ext_fields.items() if v is not None and k != SIGNATURE and k not in exclude]
    # Python's str order is Java's for keys without characters above U+FFFF; ASCII is the usual case
    # and sorting without a key function is ten times cheaper.
    if "".join(keys).isascii():
        keys.sort()
    else:
        keys.sort(key=_java_order)
    text = "".join(_text(ext_fields[k]) for k in keys)
    return text.encode("utf-8") + body


def calculate_signature(content: bytes, secret_key: str) -> str:
    """HMAC-SHA1 of `content` with the secret key, Base64 (AclUtils.calSignature)."""
    return base64.b64encode(hmac.digest(secret_key.encode("utf-8"), content, "sha1")).decode("ascii")


def signature_contents(ext_fields: Mapping[str, object], body: Buffer = b"") -> Iterator[bytes]:
    """The contents a server accepts a signature over: RocketMQ's (without `_UNIQUE_KEY_QUERY`) and,
    when that field is present, the Java client's (with it)."""
    yield signature_content(ext_fields, body, exclude=frozenset({UNIQUE_KEY_QUERY}))
    if ext_fields.get(UNIQUE_KEY_QUERY) is not None:
        yield signature_content(ext_fields, body)


def verify_signature(
    ext_fields: Mapping[str, object], body: Buffer, secret_key: str, signature: str | None
) -> bool:
    if not signature:
        return False
    return any(
        hmac.compare_digest(calculate_signature(content, secret_key), signature)
        for content in signature_contents(ext_fields, body)
    )


def sign_ext_fields(
    ext_fields: dict[str, str],
    body: Buffer,
    access_key: str,
    secret_key: str,
    security_token: str | None = None,
) -> None:
    """Add AccessKey (and SecurityToken) and then the Signature of the whole request, in place."""
    ext_fields[ACCESS_KEY] = access_key
    if security_token:
        ext_fields[SECURITY_TOKEN] = security_token
    content = signature_content(ext_fields, body, exclude=frozenset({UNIQUE_KEY_QUERY}))
    ext_fields[SIGNATURE] = calculate_signature(content, secret_key)
