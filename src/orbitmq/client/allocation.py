"""Consumer queue allocation strategies (fact sheet 11): which queues of a topic this consumer takes.

Every strategy is a pure function of (group, current client id, all queues, all client ids); the
rebalancer sorts both lists first (queues by MessageQueue order, ids by string order) so that every
consumer of the group computes the same split. Users plug their own strategy by implementing
`AllocateStrategy`.

This module knows nothing of sockets, brokers or the event loop.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence
from typing import Protocol

from orbitmq.common.errors import ClientError
from orbitmq.message.model import MessageQueue


class AllocateStrategy(Protocol):
    """Decides which of `mq_all` the consumer `current_cid` of `group` takes."""

    @property
    def name(self) -> str: ...

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]: ...


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """RocketMQ's common precondition; False means "this consumer is not (yet) in the group list"."""
    if not current_cid:
        raise ClientError("currentCID is empty")
    if not mq_all:
        raise ClientError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ClientError("cidAll is null or cidAll empty")
    return current_cid in cid_all


class _SplitByIndex:
    """A strategy that splits the queues by the consumer's place in the sorted id list: `_take` gets that
    index, the queues and how many consumers there are, once RocketMQ's precondition holds."""

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        return self._take(list(cid_all).index(current_cid), mq_all, len(cid_all))

    def _take(self, index: int, mq_all: Sequence[MessageQueue], consumers: int) -> list[MessageQueue]:
        raise NotImplementedError


class AllocateAveragely(_SplitByIndex):
    """`AVG` (the default): contiguous blocks; the first n % c consumers get one queue more."""

    name = "AVG"

    def _take(self, index: int, mq_all: Sequence[MessageQueue], consumers: int) -> list[MessageQueue]:
        n, c = len(mq_all), consumers
        mod = n % c
        if n <= c:
            average = 1
        elif mod > 0 and index < mod:
            average = n // c + 1
        else:
            average = n // c
        start = index * average if mod > 0 and index < mod else index * average + mod
        count = min(average, n - start)
        return [mq_all[(start + k) % n] for k in range(max(count, 0))]


class AllocateAveragelyByCircle(_SplitByIndex):
    """`AVG_BY_CIRCLE`: queues dealt round robin, consumer i takes queues i, i + c, i + 2c, ..."""

    name = "AVG_BY_CIRCLE"

    def _take(self, index: int, mq_all: Sequence[MessageQueue], consumers: int) -> list[MessageQueue]:
        return list(mq_all[index::consumers])


def md5_hash(key: str) -> int:
    """RocketMQ's default ring hash: the first 4 MD5 digest bytes, big-endian, unsigned."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


class AllocateConsistentHash:
    """`CONSISTENT_HASH`: a ring of `virtual_nodes` points per consumer; a queue belongs to the first
    point clockwise from its own hash (key `str(MessageQueue)`), so a joining or leaving consumer moves
    only the queues next to its points."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_nodes: int = 10, hash_function: Callable[[str], int] = md5_hash) -> None:
        if virtual_nodes < 0:
            raise ClientError(f"illegal virtualNodeCnt: {virtual_nodes}")
        self.virtual_nodes = virtual_nodes
        self.hash_function = hash_function

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        ring: dict[int, str] = {}
        for cid in cid_all:
            for r in range(self.virtual_nodes):
                ring[self.hash_function(f"{cid}-{r}")] = cid  # a later point wins a collision
        if not ring:
            return []
        points = sorted(ring)
        result = []
        for mq in mq_all:
            i = bisect.bisect_left(points, self.hash_function(str(mq)))
            owner = ring[points[i if i < len(points) else 0]]
            if owner == current_cid:
                result.append(mq)
        return result


class AllocateByConfig:
    """`CONFIG`: the configured queues, whatever the group looks like."""

    name = "CONFIG"

    def __init__(self, message_queues: Sequence[MessageQueue]) -> None:
        self.message_queues = list(message_queues)

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return list(self.message_queues)


class AllocateByMachineRoom(_SplitByIndex):
    """`MACHINE_ROOM`: only queues of brokers named `<idc>@<name>` with idc in `consumer_idcs`, split
    in blocks of |P| // c, the remainder dealt one each to the first consumers."""

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: set[str]) -> None:
        self.consumer_idcs = set(consumer_idcs)

    def _take(self, index: int, mq_all: Sequence[MessageQueue], consumers: int) -> list[MessageQueue]:
        premium = []
        for mq in mq_all:
            parts = mq.broker_name.split("@")
            if len(parts) == 2 and parts[0] in self.consumer_idcs:
                premium.append(mq)
        mod, rem = divmod(len(premium), consumers)
        result = premium[index * mod : index * mod + mod]
        if rem > index:
            result.append(premium[index + mod * consumers])
        return result


class MachineRoomResolver(Protocol):
    def broker_deploy_in(self, mq: MessageQueue) -> str: ...

    def consumer_deploy_in(self, client_id: str) -> str: ...


class AllocateMachineRoomNearby:
    """`MACHINE_ROOM_NEARBY-<inner>`: consumers take the queues of their own machine room (split by the
    inner strategy); the queues of a room with no consumer at all are split among all consumers."""

    def __init__(self, inner: AllocateStrategy, resolver: MachineRoomResolver) -> None:
        self.inner = inner
        self.resolver = resolver

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self.inner.name}"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        room_queues: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.resolver.broker_deploy_in(mq)
            if not room:
                raise ClientError(f"machine room of {mq} is null")
            room_queues.setdefault(room, []).append(mq)
        room_consumers: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.resolver.consumer_deploy_in(cid)
            if not room:
                raise ClientError(f"machine room of consumer {cid} is null")
            room_consumers.setdefault(room, []).append(cid)
        own_room = self.resolver.consumer_deploy_in(current_cid)
        result: list[MessageQueue] = []
        own_queues = room_queues.pop(own_room, [])
        if own_queues:
            result += self.inner.allocate(group, current_cid, own_queues, room_consumers[own_room])
        for room in sorted(room_queues):
            if room not in room_consumers:
                result += self.inner.allocate(group, current_cid, room_queues[room], cid_all)
        return result


def strategy_by_name(name: str) -> AllocateStrategy:
    """The built-in strategy for a RocketMQ strategy name (`AVG`, `AVG_BY_CIRCLE`, `CONSISTENT_HASH`)."""
    strategies: dict[str, Callable[[], AllocateStrategy]] = {
        "AVG": AllocateAveragely,
        "AVG_BY_CIRCLE": AllocateAveragelyByCircle,
        "CONSISTENT_HASH": AllocateConsistentHash,
    }
    try:
        return strategies[name.upper()]()
    except KeyError:
        raise ClientError(f"unknown allocation strategy {name!r}; known: {sorted(strategies)}") from None
