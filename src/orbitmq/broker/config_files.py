"""The broker's JSON config files under `<storePathRootDir>/config/`: crash-safe write, tolerant read.

Written as RocketMQ's MixAll.string2File does (`.tmp`, the old file copied to `.bak`, then an atomic
rename); read from the file, or its `.bak` when it is missing, empty or unparsable. Java's fastjson
output (unquoted integer keys, `{0:12}`) is accepted. Knows nothing of what the files mean.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)

# fastjson writes Map<Integer, Long> keys bare: `{0:12,1:7}` -> quote them for a standard parser.
_BARE_INT_KEY = re.compile(rb"([{,]\s*)(-?\d+)(\s*:)")


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2)


def load_json(data: bytes) -> Any:
    """Standard JSON, or fastjson's output with bare integer keys."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        from orbitmq.protocol import java_json

        return java_json.loads(data)
    except ImportError:  # pragma: no cover - protocol.java_json is part of the package
        return orjson.loads(_BARE_INT_KEY.sub(rb'\1"\2"\3', data))


def write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    bak = path.with_name(path.name + ".bak")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if path.exists():
            shutil.copyfile(path, bak)
    except OSError:
        # (a full disk: the old file stays as it was, and no partial .tmp or .bak is left to be read)
        for partial in (tmp, bak):
            partial.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def read_json_file(path: Path) -> Any | None:
    """The parsed content of `path` (or its `.bak`), or None when neither holds valid JSON."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            data = candidate.read_bytes()
        except FileNotFoundError:
            continue
        if not data.strip():
            continue
        try:
            return load_json(data)
        except ValueError as exc:
            log.warning("config file %s is not valid JSON (%s); trying the backup", candidate, exc)
    return None
