"""What the loop wants flushed next, shared with the group-commit thread (flush.py).

Compiled: the loop calls `want` once per SYNC_FLUSH send, and on the interpreted FlushService that call
cost about as much as the rest of the wait's bookkeeping together. The method makes no call, so under
the GIL it runs whole: the flusher thread sees `wanted` and `sleeping` either before or after it.
"""

from __future__ import annotations


class FlushWanted:
    __slots__ = ("sleeping", "wanted")

    def __init__(self) -> None:
        self.wanted = 0  # the highest end offset a waiting send needs flushed
        self.sleeping = False  # set by the flusher before it looks at `wanted` and sleeps

    def want(self, end_offset: int) -> bool:
        """Raise `wanted` to `end_offset`. True when the flusher sleeps and must be woken: once per
        sleep, whatever the number of sends of a burst (`sleeping` is cleared here)."""
        if end_offset > self.wanted:  # noqa: PLR1730 -- compiled, max() is a generic builtin call
            self.wanted = end_offset
        if self.sleeping:
            self.sleeping = False
            return True
        return False
