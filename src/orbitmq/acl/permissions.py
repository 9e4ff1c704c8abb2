"""Permission bits and their text form as plain_acl.yml writes them (RocketMQ's acl Permission).

DENY 1, ANY 2, PUB 4, SUB 8; "PUB", "SUB", "PUB|SUB"/"SUB|PUB", "DENY"; anything else is DENY.
"""

from __future__ import annotations

from orbitmq.acl.errors import AclError
from orbitmq.protocol.codes import RequestCode

DENY = 1
ANY = 2
PUB = 4
SUB = 8

RETRY_PREFIX = "%RETRY%"

_BY_TEXT = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}

# RocketMQ 4.9.8's admin codes, plus the ACL codes themselves: 4.9.8 lets any signed account rewrite
# the ACL (and read every secret key with code 54); orbitmq asks for an admin account. Also beyond
# 4.9.8: the codes that move offsets or delete data broker-wide (reset/clone offsets, clean queues,
# topics or commit-log files) need an admin account too, not just any signature.
ADMIN_CODES = frozenset(
    {
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.CLONE_GROUP_OFFSET,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
        RequestCode.CLEAN_UNUSED_TOPIC,
        RequestCode.DELETE_EXPIRED_COMMITLOG,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        RequestCode.DELETE_ACL_CONFIG,
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
        RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG,
    }
)


def parse_perm(text: object) -> int:
    if not isinstance(text, str):
        return DENY
    return _BY_TEXT.get(text.strip(), DENY)


def perm_text(perm: int) -> str:
    if perm & DENY:
        return "DENY"
    if perm & PUB and perm & SUB:
        return "PUB|SUB"
    if perm & PUB:
        return "PUB"
    if perm & SUB:
        return "SUB"
    return "DENY"


def check_permission(needed: int, owned: int) -> bool:
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def parse_resource_perms(entries: object, *, is_topic: bool) -> dict[str, int]:
    """["topicA=PUB|SUB", ...] -> {resource: perm}; groups become their %RETRY% topic."""
    out: dict[str, int] = {}
    if entries is None:
        return out
    if not isinstance(entries, list):
        raise AclError(f"Parse resource permission failed: expected a list, got {entries!r}")
    kind = "topic" if is_topic else "group"
    for entry in entries:
        items = [part for part in str(entry).split("=") if part]
        if len(items) != 2:
            raise AclError(f"Parse resource permission failed for {kind}:{entry}")
        name = items[0].strip()
        out[name if is_topic else retry_topic(name)] = parse_perm(items[1])
    return out


def check_resource_perms(entries: list[str]) -> None:
    """What UPDATE_AND_CREATE_ACL_CONFIG accepts: `Res=Perm` with a perm RocketMQ knows."""
    for entry in entries:
        items = [part for part in entry.split("=") if part]
        if len(items) != 2:
            raise AclError(
                f"Parse Resource format error for {entry}.\n"
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        if items[1].strip() != "DENY" and parse_perm(items[1]) == DENY:
            raise AclError(
                f"Parse resource permission error for {entry}.\n"
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )
