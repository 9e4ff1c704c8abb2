"""BadRequest: stop a processor and answer with a response code and remark (see base.py's `guarded`)."""

from __future__ import annotations


class BadRequest(Exception):
    """Stop processing and answer `code` with `remark`."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark
