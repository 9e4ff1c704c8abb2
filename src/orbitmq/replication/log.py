"""What replication needs from a commit log; the store's MessageStore satisfies it.

Replication reads and appends raw commit-log bytes by physical offset and nothing else, so it depends on
this small protocol instead of the store's classes.
"""

from __future__ import annotations

from typing import Protocol


class ReplicatedLog(Protocol):
    def get_max_phy_offset(self) -> int:
        """The end of the log: the physical offset the next byte will be written at."""
        ...

    def get_commit_log_data(self, offset: int, max_bytes: int) -> memoryview | None:
        """Up to `max_bytes` of raw log starting at `offset` (None when there is nothing there yet)."""
        ...

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool:
        """Slave side: append bytes that continue the log at `start_offset`, then dispatch them."""
        ...

    def truncate_commit_log(self, offset: int) -> None:
        """Cut the log (and what was dispatched from it) at `offset`: a returning old master's tail."""
        ...
