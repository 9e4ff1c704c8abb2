"""What the loop wants flushed next, shared with the group-commit thread (flush.py).

Compiled: the loop calls `want` once per SYNC_FLUSH send, and on the interpreted FlushService that call
cost about as much as the rest of the wait's bookkeeping together. The method makes no call, so under
the GIL it runs whole: the flusher thread sees `wanted` and `sleeping` either before or after it.
"""

from __future__ import annotations


class FlushWanted:
    __slots__ = ("gather_until", "sends", "sleeping", "wanted")

    def __init__(self) -> None:
        self.wanted = 0  # the highest end offset a waiting send needs flushed
        self.sleeping = False  # set by the flusher before it looks at `wanted` and sleeps
        self.sends = 0  # want() calls so far: what the group commit's gathering counts
        self.gather_until = 0  # while the flusher gathers a round: wake it when `sends` gets here (0: not)

    def want(self, end_offset: int) -> bool:
        """Raise `wanted` to `end_offset`. True when the flusher must be woken: once per sleep, whatever
        the number of sends of a burst (`sleeping` is cleared here), and once when the round it gathers
        is complete (`gather_until` is cleared here)."""
        if end_offset > self.wanted:  # noqa: PLR1730 -- compiled, max() is a generic builtin call
            self.wanted = end_offset
        sends = self.sends + 1
        self.sends = sends
        if self.sleeping:
            self.sleeping = False
            return True
        gather = self.gather_until
        if gather and sends >= gather:
            self.gather_until = 0
            return True
        return False
