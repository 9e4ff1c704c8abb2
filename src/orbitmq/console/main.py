"""`orbitmq console` entry point: says which extra to install when aiohttp is missing (console/app.py)."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    try:
        from orbitmq.console import app
    except ImportError as exc:
        print(f"orbitmq console: needs the ops extra (pip install 'orbitmq[ops]'): {exc}", file=sys.stderr)
        return 2
    return app.main(argv)
