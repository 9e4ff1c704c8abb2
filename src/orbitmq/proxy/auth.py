"""ACL for 5.x clients, with aclEnable=true: the same plain_acl.yml accounts and permissions as 4.x.

A 5.x client signs each call with its account: `authorization: MQv2-HMAC-SHA1 Credential=AK,
SignedHeaders=x-mq-date-time, Signature=HEX` where HEX is the HMAC-SHA1 of the x-mq-date-time header
with the secret key. A verified caller's requests to the broker are then signed with the same account
and pass the broker's own ACL check (resource permissions, white addresses), as a 4.x client's would.
A bad signature is answered UNAUTHORIZED, a missing permission FORBIDDEN.
"""

from __future__ import annotations

import hmac
from typing import Final

from orbitmq.acl.errors import AclError
from orbitmq.acl.validator import PlainAccessValidator
from orbitmq.proxy.call_context import AUTHORIZATION, DATE_TIME, CallContext
from orbitmq.proxy.status import Code, ProxyError

SCHEME: Final = "MQv2-HMAC-SHA1"
# The validator's refusals that mean "who are you", not "you may not".
_UNAUTHENTICATED: Final = ("No accessKey is configured", "No acl config for", "Check signature failed")


def parse_authorization(value: str) -> tuple[str, str]:
    """(access key, hex signature) of an authorization header; UNAUTHORIZED if it is malformed."""
    scheme, _, rest = value.strip().partition(" ")
    fields: dict[str, str] = {}
    for item in rest.split(","):
        key, sep, val = item.strip().partition("=")
        if sep:
            fields[key.strip()] = val.strip()
    access_key = fields.get("Credential", "").split("/")[0]
    signature = fields.get("Signature", "")
    if scheme != SCHEME or not access_key or not signature:
        raise ProxyError(Code.UNAUTHORIZED, f"the {AUTHORIZATION} header is not {SCHEME} with a credential")
    return access_key, signature


def authenticate(validator: PlainAccessValidator, ctx: CallContext) -> tuple[str, str] | None:
    """The caller's (access key, secret key) once its signature checks out; None for a caller without
    one (the broker's check may still let it in by its address). UNAUTHORIZED otherwise."""
    header = ctx.headers.get(AUTHORIZATION)
    if not header:
        return None
    access_key, signature = parse_authorization(header)
    validator.maybe_reload()
    account = validator.config.accounts.get(access_key)
    if account is None:
        raise ProxyError(Code.UNAUTHORIZED, f"No acl config for {access_key}")
    date_time = ctx.headers.get(DATE_TIME, "")
    expected = hmac.new(account.secret_key.encode(), date_time.encode(), "sha1").hexdigest()
    if not date_time or not hmac.compare_digest(expected, signature.lower()):
        raise ProxyError(Code.UNAUTHORIZED, f"Check signature failed for accessKey={access_key}")
    return access_key, account.secret_key


def refusal(error: AclError) -> ProxyError:
    """The broker's ACL refusal as the Code a 5.x client expects."""
    text = str(error)
    code = Code.UNAUTHORIZED if text.startswith(_UNAUTHENTICATED) else Code.FORBIDDEN
    return ProxyError(code, text)
