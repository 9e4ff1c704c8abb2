"""RocketMQ 4.x ACL request signatures (AclClientRPCHook / AclUtils, fact sheet 9.3).

The signed content is the values (never the keys) of every ext field except `Signature`, in the order
of their keys as Java's `String.compareTo` sorts them (UTF-16 code units), UTF-8 encoded, followed by
the raw body; the signature is HMAC-SHA1 keyed with the secret key's UTF-8 bytes, standard Base64.

`_UNIQUE_KEY_QUERY` is left out of what a server checks (PlainAccessValidator.parse) but the Java client
signs it (apache/rocketmq #5310): `sign_request` leaves it out so orbitmq's requests pass RocketMQ's
check, and a server may accept either (`verify_signature`).
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Mapping

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


_NO_UNIQUE_KEY = frozenset({UNIQUE_KEY_QUERY})
# Bodies up to this size are joined to the header text and hashed in one call (cheapest); larger ones
# are hashed incrementally, so a 4 MB send is never copied to be checked.
_JOIN_LIMIT = 64 * 1024


def signature_content(ext_fields: Mapping[str, object], exclude: frozenset[str] = frozenset()) -> bytes:
    """The signed header text: the ext values (but Signature and `exclude`) in Java's key order; the
    body follows it."""
    keys = [k for k, v in ext_fields.items() if v is not None and k != SIGNATURE and k not in exclude]
    # Python's str order is Java's for keys without characters above U+FFFF; ASCII is the usual case
    # and sorting without a key function is ten times cheaper.
    if "".join(keys).isascii():
        keys.sort()
    else:
        keys.sort(key=_java_order)
    return "".join(_text(ext_fields[k]) for k in keys).encode("utf-8")


def calculate_signature(content: Buffer, secret_key: str, body: Buffer = b"") -> str:
    """HMAC-SHA1 of `content` (+ `body`) with the secret key, Base64 (AclUtils.calSignature)."""
    key = secret_key.encode("utf-8")
    if len(body) <= _JOIN_LIMIT:
        digest = hmac.digest(key, bytes(content) + body if body else content, "sha1")
    else:
        mac = hmac.new(key, content, "sha1")
        mac.update(body)
        digest = mac.digest()
    return base64.b64encode(digest).decode("ascii")


def _request_signature(
    ext_fields: Mapping[str, object], body: Buffer, secret_key: str, exclude: frozenset[str]
) -> str:
    return calculate_signature(signature_content(ext_fields, exclude), secret_key, body)


def verify_signature(
    ext_fields: Mapping[str, object], body: Buffer, secret_key: str, signature: str | None
) -> bool:
    """True if `signature` signs the request as RocketMQ's server checks it (without
    `_UNIQUE_KEY_QUERY`) or, when that field is present, as the Java client signs it (with it)."""
    if not signature:
        return False
    if hmac.compare_digest(_request_signature(ext_fields, body, secret_key, _NO_UNIQUE_KEY), signature):
        return True
    return ext_fields.get(UNIQUE_KEY_QUERY) is not None and hmac.compare_digest(
        _request_signature(ext_fields, body, secret_key, frozenset()), signature
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
    ext_fields[SIGNATURE] = _request_signature(ext_fields, body, secret_key, _NO_UNIQUE_KEY)
