"""plain_acl.yml: RocketMQ 4.x's ACL file, read with PyYAML's safe_load and written back the same way.

Every account is compiled once here (perms parsed, address pattern compiled), so a request costs
dictionary lookups only. Access and secret keys must be longer than 6 characters (AclConstants).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orbitmq.acl.addresses import Matcher, compile_pattern
from orbitmq.acl.errors import AclError
from orbitmq.acl.permissions import DENY, parse_perm, parse_resource_perms

KEY_MIN_LENGTH = 6


@dataclass(slots=True)
class PlainAccount:
    """One account as the file spells it (kept verbatim for writing back) and compiled."""

    access_key: str
    """The account's name, which clients sign with; longer than 6 characters."""
    secret_key: str
    """The key signatures are made with; longer than 6 characters."""
    white_remote_address: str | None = None
    """Client addresses (e.g. 192.168.0.*, 10.0.1-3.*) from which this account's requests pass without
    signature or permission checks."""
    admin: bool = False
    """May update topics and groups, broker and ACL settings (and, on an ACL nameserver, write)."""
    default_topic_perm: str | None = None
    """What the account may do on topics topicPerms does not name: DENY, PUB, SUB or PUB|SUB; unset:
    DENY."""
    default_group_perm: str | None = None
    """What the account may do on groups groupPerms does not name: DENY, PUB, SUB or PUB|SUB; unset:
    DENY."""
    topic_perms: list[str] = field(default_factory=list)
    """Per-topic permissions, each `topic=PERM` (e.g. topicA=DENY, topicB=PUB|SUB)."""
    group_perms: list[str] = field(default_factory=list)
    """Per-group permissions, each `group=PERM` (e.g. groupA=SUB)."""
    # compiled
    white: Matcher = field(default=lambda _a: False, repr=False)
    default_topic: int = DENY
    default_group: int = DENY
    perms: dict[str, int] | None = None

    @classmethod
    def from_obj(cls, obj: object) -> PlainAccount:
        if not isinstance(obj, dict):
            raise AclError(f"an account must be a mapping, got {obj!r}")
        access_key = obj.get("accessKey")
        secret_key = obj.get("secretKey")
        account = cls(
            access_key="" if access_key is None else str(access_key),
            secret_key="" if secret_key is None else str(secret_key),
            white_remote_address=_opt_str(obj.get("whiteRemoteAddress")),
            admin=_java_bool(obj.get("admin")),
            default_topic_perm=_opt_str(obj.get("defaultTopicPerm")),
            default_group_perm=_opt_str(obj.get("defaultGroupPerm")),
            topic_perms=_str_list(obj.get("topicPerms")),
            group_perms=_str_list(obj.get("groupPerms")),
        )
        account.compile()
        return account

    def compile(self) -> None:
        if len(self.access_key) <= KEY_MIN_LENGTH or len(self.secret_key) <= KEY_MIN_LENGTH:
            raise AclError(
                f"The accessKey={self.access_key} and secretKey=****** cannot be null and length should "
                f"longer than {KEY_MIN_LENGTH}"
            )
        self.white = compile_pattern(self.white_remote_address)
        self.default_topic = parse_perm(self.default_topic_perm)
        self.default_group = parse_perm(self.default_group_perm)
        perms = parse_resource_perms(self.group_perms, is_topic=False)
        perms.update(parse_resource_perms(self.topic_perms, is_topic=True))
        self.perms = perms or None

    def to_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {"accessKey": self.access_key, "secretKey": self.secret_key}
        out["whiteRemoteAddress"] = self.white_remote_address
        out["admin"] = self.admin
        if self.default_topic_perm is not None:
            out["defaultTopicPerm"] = self.default_topic_perm
        if self.default_group_perm is not None:
            out["defaultGroupPerm"] = self.default_group_perm
        if self.topic_perms:
            out["topicPerms"] = list(self.topic_perms)
        if self.group_perms:
            out["groupPerms"] = list(self.group_perms)
        return out


@dataclass(slots=True)
class PlainAclConfig:
    """The whole file, as RocketMQ writes it:

    globalWhiteRemoteAddresses: [10.10.103.*]
    accounts:
      - accessKey: RocketMQ
        secretKey: 12345678
        whiteRemoteAddress:
        admin: false
        defaultTopicPerm: DENY
        defaultGroupPerm: SUB
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=DENY, groupB=PUB|SUB]
    dataVersion: [{counter: 1, timestamp: 1700000000000}]
    """

    global_white_addresses: list[str] = field(default_factory=list)
    """Client addresses from which every request passes without any ACL check (patterns as
    whiteRemoteAddress)."""
    accounts: dict[str, PlainAccount] = field(default_factory=dict)
    counter: int = 0
    timestamp: int = 0
    global_white: list[Matcher] = field(default_factory=list, repr=False)

    @classmethod
    def from_obj(cls, obj: object) -> PlainAclConfig:
        if obj is None:
            obj = {}
        if not isinstance(obj, dict):
            raise AclError("plain_acl.yml must hold a mapping at the top")
        config = cls(global_white_addresses=_str_list(obj.get("globalWhiteRemoteAddresses")))
        config.global_white = [compile_pattern(p) for p in config.global_white_addresses]
        accounts = obj.get("accounts") or []
        if not isinstance(accounts, list):
            raise AclError("plain_acl.yml: accounts must be a list")
        for raw in accounts:
            account = PlainAccount.from_obj(raw)
            config.accounts[account.access_key] = account
        versions = obj.get("dataVersion")
        if isinstance(versions, list) and versions and isinstance(versions[0], dict):
            config.counter = _int(versions[0].get("counter"))
            config.timestamp = _int(versions[0].get("timestamp"))
        return config

    def to_obj(self) -> dict[str, Any]:
        return {
            "globalWhiteRemoteAddresses": list(self.global_white_addresses),
            "accounts": [a.to_obj() for a in self.accounts.values()],
            "dataVersion": [{"counter": self.counter, "timestamp": self.timestamp}],
        }

    def next_version(self, now_ms: int | None = None) -> None:
        self.counter += 1
        self.timestamp = int(time.time() * 1000) if now_ms is None else now_ms

    def version_json(self) -> str:
        """DataVersion.toJson() of RocketMQ: {"counter":N,"stateVersion":0,"timestamp":T}."""
        return f'{{"counter":{self.counter},"stateVersion":0,"timestamp":{self.timestamp}}}'


def load_file(path: Path) -> PlainAclConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AclError(f"ACL file {path} does not exist") from None
    import yaml  # here, not at the top: brokers without aclEnable never read YAML (start-up time)

    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AclError(f"ACL file {path} is not valid YAML: {exc}") from None
    return PlainAclConfig.from_obj(obj)


def save_file(path: Path, config: PlainAclConfig) -> None:
    """Write the file atomically (temp file + rename), so a reader never sees half of it."""
    import yaml

    text = yaml.safe_dump(config.to_obj(), sort_keys=False, default_flow_style=False, allow_unicode=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def _opt_str(value: object) -> str | None:
    if value is None:
        return None
    return str(value)


def _java_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.strip().lower() == "true"


def _str_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value if v is not None]
    return [p.strip() for p in str(value).split(",") if p.strip()]


def _int(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0
