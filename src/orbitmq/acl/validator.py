"""PlainAccessValidator: check one request against plain_acl.yml, reload the file when it changes,
and apply the ACL admin requests (update/delete account, global white list) to the file.

Only the hook (see `AccessPolicy`) calls `check`; with ACL off nothing here runs.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orbitmq.acl.addresses import host_of
from orbitmq.acl.errors import AclError
from orbitmq.acl.permissions import ADMIN_CODES, PUB, check_permission, check_resource_perms
from orbitmq.acl.plain_config import PlainAccount, PlainAclConfig, load_file, save_file
from orbitmq.acl.resources import needed_resources
from orbitmq.protocol.acl_sign import ACCESS_KEY, SIGNATURE, verify_signature
from orbitmq.protocol.command import RemotingCommand

log = logging.getLogger("orbitmq.acl")

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
GROUP_PREFIX = "%RETRY%"


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """Which requests are checked and which need an admin account.

    The broker checks every request (`checked_codes=None`); the nameserver only its writes, all of
    which need an admin account.
    """

    admin_codes: frozenset[int] = ADMIN_CODES
    checked_codes: frozenset[int] | None = None


class PlainAccessValidator:
    """The file is stat'ed at most once per `check_interval` seconds, on the request path: no thread, and a
    reload that fails keeps the previous rules (logged).

    Order of the checks (PlainPermissionManager.validate, fact sheet 9.4):
    1. the client IP matches a global white address -> allowed;
    2. no AccessKey -> "No accessKey is configured"; unknown -> "No acl config for <key>";
    3. the client IP matches the account's whiteRemoteAddress -> allowed (no signature needed);
    4. the signature must match ("Check signature failed for accessKey=<key>");
    5. PUB on RMQ_SYS_TRACE_TOPIC only -> allowed (message trace);
    6. admin codes need `admin: true`; 7. every needed resource's permission (explicit entry, else the
       default topic/group permission; admin accounts without explicit entries pass).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        policy: AccessPolicy | None = None,
        check_interval: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.policy = policy or AccessPolicy()
        self.check_interval = check_interval
        self._monotonic = monotonic
        self._mtime_ns = -1
        self._size = -1
        self._next_check = 0.0
        self.config = PlainAclConfig()
        self.reload()

    # ---- file -------------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the file now; raises AclError if it is missing or invalid."""
        stat = self.path.stat() if self.path.exists() else None
        self.config = load_file(self.path)
        if stat is not None:
            self._mtime_ns, self._size = stat.st_mtime_ns, stat.st_size
        log.info("ACL file %s loaded: %d accounts", self.path, len(self.config.accounts))

    def maybe_reload(self) -> None:
        now = self._monotonic()
        if now < self._next_check:
            return
        self._next_check = now + self.check_interval
        try:
            stat = self.path.stat()
        except OSError:
            return
        if stat.st_mtime_ns == self._mtime_ns and stat.st_size == self._size:
            return
        try:
            self.reload()
        except (AclError, OSError) as exc:
            # Keep the rules in force; a half-edited file must not open (or close) the broker.
            self._mtime_ns, self._size = stat.st_mtime_ns, stat.st_size
            log.error("ACL file %s not reloaded, previous rules stay: %s", self.path, exc)

    def _save(self) -> None:
        self.config.next_version()
        save_file(self.path, self.config)
        stat = self.path.stat()
        self._mtime_ns, self._size = stat.st_mtime_ns, stat.st_size

    # ---- checking ---------------------------------------------------------------------------

    def check(self, request: RemotingCommand, remote_address: str) -> None:
        """Raise AclError (RocketMQ's text) if the request may not run."""
        policy = self.policy
        if policy.checked_codes is not None and request.code not in policy.checked_codes:
            return
        self.maybe_reload()
        config = self.config
        ip = host_of(remote_address)
        for white in config.global_white:
            if white(ip):
                return
        ext = request.ext_fields
        access_key = ext.get(ACCESS_KEY)
        if not access_key:
            raise AclError("No accessKey is configured")
        account = config.accounts.get(access_key)
        if account is None:
            raise AclError(f"No acl config for {access_key}")
        if account.white(ip):
            return
        if not verify_signature(
            ext,
            request.body if request.body_parts is None else request.body_bytes(),
            account.secret_key,
            ext.get(SIGNATURE),
        ):
            raise AclError(f"Check signature failed for accessKey={access_key}")
        resources = needed_resources(request) if policy.checked_codes is None else {}
        if resources.get(TRACE_TOPIC) == PUB:
            return
        if request.code in policy.admin_codes and not account.admin:
            raise AclError(
                f"Need admin permission for request code={request.code}, but accessKey={access_key} is not"
            )
        self._check_resources(resources, account)

    @staticmethod
    def _check_resources(resources: dict[str, int], account: PlainAccount) -> None:
        owned_map = account.perms
        if owned_map is None and account.admin:
            return
        for resource, needed in resources.items():
            is_group = resource.startswith(GROUP_PREFIX)
            owned = None if owned_map is None else owned_map.get(resource)
            if owned is None:
                owned = account.default_group if is_group else account.default_topic
            if not check_permission(needed, owned):
                shown = f"group={resource[len(GROUP_PREFIX) :]}" if is_group else f"topic={resource}"
                raise AclError(f"No default permission for {shown}")

    # ---- ACL admin requests -----------------------------------------------------------------

    def update_account(self, fields: dict[str, object]) -> None:
        """UPDATE_AND_CREATE_ACL_CONFIG: create the account or change the fields given; saves the file."""
        self.maybe_reload()
        access_key = str(fields.get("accessKey") or "")
        topic_perms = _split(fields.get("topicPerms"))
        group_perms = _split(fields.get("groupPerms"))
        check_resource_perms(topic_perms)
        check_resource_perms(group_perms)
        current = self.config.accounts.get(access_key)
        obj: dict[str, object] = current.to_obj() if current is not None else {"accessKey": access_key}
        for key in ("secretKey", "whiteRemoteAddress", "defaultTopicPerm", "defaultGroupPerm", "admin"):
            value = fields.get(key)
            if value is not None and value != "":
                obj[key] = value
        if topic_perms:
            obj["topicPerms"] = topic_perms
        if group_perms:
            obj["groupPerms"] = group_perms
        account = PlainAccount.from_obj(obj)
        self.config.accounts[access_key] = account
        self._save()

    def delete_account(self, access_key: str) -> bool:
        self.maybe_reload()
        if self.config.accounts.pop(access_key, None) is None:
            return False
        self._save()
        return True

    def update_global_white(self, patterns: list[str]) -> None:
        from orbitmq.acl.addresses import compile_pattern

        matchers = [compile_pattern(p) for p in patterns]  # refuse a bad pattern before saving
        self.maybe_reload()
        self.config.global_white_addresses = list(patterns)
        self.config.global_white = matchers
        self._save()


def _split(value: object) -> list[str]:
    if value is None:
        return []
    return [p.strip() for p in str(value).split(",") if p.strip()]
