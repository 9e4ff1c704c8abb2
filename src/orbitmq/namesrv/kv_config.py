"""KVConfigManager: the NameServer's namespaced key/value configuration, kept in kvConfig.json.

File shape: `{"configTable":{"<namespace>":{"<key>":"<value>"}}}` (fact sheet 4.9), rewritten on every
put/delete as RocketMQ's MixAll.string2File does (`.tmp`, `.bak`, rename) and read back from `.bak`
when the file is missing or unreadable. Synchronous file I/O: the file is tiny, writes are rare.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from orbitmq.protocol import java_json

log = logging.getLogger("orbitmq.namesrv")

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfigManager:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            table = self._read(candidate)
            if table is not None:
                self.table = table
                return

    def _read(self, path: Path) -> dict[str, dict[str, str]] | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if not data.strip():
            return None
        try:
            parsed = java_json.loads(data)
            config_table = parsed.get("configTable") or {}
            return {str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in config_table.items()}
        except (ValueError, AttributeError) as exc:
            log.warning("cannot read %s: %s", path, exc)
            return None

    def persist(self) -> None:
        text = java_json.dumps_pretty({"configTable": self.table})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if self.path.exists():
            shutil.copyfile(self.path, self.path.with_name(self.path.name + ".bak"))
        os.replace(tmp, self.path)

    def put(self, namespace: str, key: str, value: str) -> None:
        self.table.setdefault(namespace, {})[key] = value
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        kv = self.table.get(namespace)
        if kv is None or key not in kv:
            return
        del kv[key]
        if not kv:
            del self.table[namespace]
        self.persist()

    def namespace(self, namespace: str) -> dict[str, str] | None:
        kv = self.table.get(namespace)
        return dict(kv) if kv else None
