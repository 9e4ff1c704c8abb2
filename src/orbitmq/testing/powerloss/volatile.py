"""The volatile write cache of the power-loss file system: file contents that are not yet synced.

What is in the backing directory survives a power cut; what is only in a `VolatileFile`'s pages does
not. No FUSE here (fs.py maps kernel requests onto these calls), so the rules are plain to read.
"""

from __future__ import annotations

import os

PAGE = 4096


class VolatileFile:
    """One file: the backing (durable) file plus the pages written since its last sync.

    - `write` (a write(2) or a dirty mmap page written back by the kernel) lands in memory pages only; the
      size a write extends the file to is volatile too.
    - `sync` (fsync, fdatasync, msync: the kernel sends one FUSE fsync for each) writes this file's pages
      and size to the backing file. Nothing else ever writes file data to the backing file.
    - `truncate` (ftruncate, O_TRUNC) is metadata: applied to the backing file at once, like a journaled
      size change. Namespace changes (fs.py) are durable at once too, so a power cut can lose data, never
      a file or its preallocated size.
    """

    __slots__ = ("fd", "pages", "size")

    def __init__(self, backing_path: str) -> None:
        self.fd = os.open(backing_path, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.pages: dict[int, bytearray] = {}

    def _durable(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the backing file, zeros past its end (b"" for an empty range)."""
        if end <= start:
            return b""
        data = os.pread(self.fd, end - start, start)
        return data + bytes(end - start - len(data))

    def read(self, offset: int, length: int) -> bytes:
        end = min(offset + length, self.size)
        if offset >= end:
            return b""
        parts: list[bytes] = []
        pos = offset
        while pos < end:
            index, within = divmod(pos, PAGE)
            chunk_end = min(end, (index + 1) * PAGE)
            page = self.pages.get(index)
            if page is not None:
                parts.append(bytes(page[within : within + chunk_end - pos]))
            else:
                # Untouched pages: one pread for the whole run of them.
                run_end = chunk_end
                while run_end < end and run_end // PAGE not in self.pages:
                    run_end = min(end, run_end + PAGE)
                parts.append(self._durable(pos, run_end))
                chunk_end = run_end
            pos = chunk_end
        return b"".join(parts)

    def write(self, offset: int, data: bytes) -> int:
        view = memoryview(data)
        pos = offset
        end = offset + len(data)
        while pos < end:
            index, within = divmod(pos, PAGE)
            page = self.pages.get(index)
            if page is None:
                start = index * PAGE
                page = bytearray(self._durable(start, min(start + PAGE, self.size)).ljust(PAGE, b"\0"))
                self.pages[index] = page
            take = min(PAGE - within, end - pos)
            page[within : within + take] = view[pos - offset : pos - offset + take]
            pos += take
        self.size = max(self.size, end)
        return len(data)

    def truncate(self, length: int) -> None:
        os.ftruncate(self.fd, length)
        if length < self.size:
            last, within = divmod(length, PAGE)
            for index in [i for i in self.pages if i > last or (i == last and within == 0)]:
                del self.pages[index]
            page = self.pages.get(last)
            if page is not None:
                page[within:] = bytes(PAGE - within)
        self.size = length

    def sync(self) -> None:
        for index, page in sorted(self.pages.items()):
            start = index * PAGE
            os.pwrite(self.fd, bytes(page[: max(0, min(PAGE, self.size - start))]), start)
        if os.fstat(self.fd).st_size != self.size:
            os.ftruncate(self.fd, self.size)
        self.pages.clear()

    @property
    def unsynced_pages(self) -> int:
        return len(self.pages)

    def close(self) -> None:
        os.close(self.fd)
