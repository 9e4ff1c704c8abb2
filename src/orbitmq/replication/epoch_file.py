"""The epoch file beside the log (RocketMQ 5's `epochFileCheckpoint`): which master epoch wrote from where.

Each entry is `epoch-startOffset`; an epoch ends where the next one starts (the last at the log's end).
The file is RocketMQ's CheckpointFile text: the entry count, the masked CRC-32 of the entry lines, then
one line per entry. A returning old master compares it with the new master's to find where its log
stops agreeing, and cuts the rest.
"""

from __future__ import annotations

import os
from pathlib import Path

from orbitmq.common.errors import StoreError
from orbitmq.message.hashing import crc32
from orbitmq.replication.log import ReplicatedLog

FILE_NAME = "epochFileCheckpoint"


class EpochFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[tuple[int, int]] = []  # (epoch, start offset), epochs increasing
        if path.exists():
            self.entries = parse_epoch_text(path.read_text(encoding="utf-8"))

    @property
    def last_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else 0

    def append(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; False (nothing written) if it is not newer."""
        if self.entries and (epoch <= self.entries[-1][0] or start_offset < self.entries[-1][1]):
            return False
        self.entries.append((epoch, start_offset))
        self._write()
        return True

    def truncate_from(self, offset: int) -> None:
        """Drop the epochs starting at or past `offset` (the log was cut there)."""
        kept = [e for e in self.entries if e[1] < offset]
        if kept != self.entries:
            self.entries = kept
            self._write()

    def replace(self, entries: list[tuple[int, int]]) -> None:
        self.entries = list(entries)
        self._write()

    def _write(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(format_epoch_text(self.entries), encoding="utf-8")
        os.replace(tmp, self.path)


def format_epoch_text(entries: list[tuple[int, int]]) -> str:
    lines = "".join(f"{epoch}-{start}\n" for epoch, start in entries)
    return f"{len(entries)}\n{crc32(lines.encode())}\n{lines}"


def parse_epoch_text(text: str) -> list[tuple[int, int]]:
    head = text.split("\n", 2)
    if len(head) < 3:
        raise StoreError("epoch file: expected a count line and a CRC line")
    try:
        count, crc = int(head[0]), int(head[1])
        entries = [(int(a), int(b)) for a, _, b in (line.partition("-") for line in head[2].splitlines())]
    except ValueError as exc:
        raise StoreError(f"epoch file: {exc}") from None
    if len(entries) != count or (crc != 0 and crc != crc32(head[2].encode())):
        raise StoreError(f"epoch file: {len(entries)} entries for a count of {count}, or a CRC mismatch")
    return entries


def consistent_offset(
    local: list[tuple[int, int]], local_end: int, master: list[tuple[int, int]], master_end: int
) -> int:
    """Where a replica's log stops agreeing with the master's: the end of the newest epoch both logs hold
    from the same start (the earlier of the two ends). 0 when they share no epoch."""
    master_starts = dict(master)
    for i in range(len(local) - 1, -1, -1):
        epoch, start = local[i]
        if master_starts.get(epoch) != start:
            continue
        local_stop = local[i + 1][1] if i + 1 < len(local) else local_end
        later = [s for e, s in master if e > epoch]
        master_stop = later[0] if later else master_end
        return min(local_stop, master_stop)
    return 0


def agree_with_master(
    log: ReplicatedLog, epochs: EpochFile, master: list[tuple[int, int]], master_max: int
) -> int | None:
    """Before a slave replicates: cut its log past the last epoch it shares with the master (an old
    master's unreplicated tail), so no offset ever holds two different messages, and keep the master's
    epochs its log holds. Returns where the log was cut (None if it was not)."""
    local_end = log.get_max_phy_offset()
    if epochs.entries:
        cut = min(local_end, consistent_offset(epochs.entries, local_end, master, master_max))
    else:
        cut = min(local_end, master_max)
    if cut < local_end:
        log.truncate_commit_log(cut)
    held = [e for e in master if e[1] <= log.get_max_phy_offset()]
    if held != epochs.entries:
        epochs.replace(held)
    return cut if cut < local_end else None
