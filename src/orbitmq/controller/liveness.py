"""Which brokers are alive, from their BROKER_HEARTBEATs (each controller keeps its own view; not state).

A broker is alive while its last heartbeat is younger than the timeout it asked for
(controllerHeartBeatTimeoutMills) and its connection is open: a killed process closes its connection at
once, so its group needs no timeout to start an election.
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.common.clock import Clock


@dataclass(slots=True)
class BrokerLive:
    broker_name: str
    broker_id: int
    address: str
    last_ms: int
    timeout_ms: int
    epoch: int
    max_offset: int
    priority: int
    conn: object

    def alive(self, now_ms: int) -> bool:
        return now_ms - self.last_ms <= self.timeout_ms


class Liveness:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._brokers: dict[tuple[str, int], BrokerLive] = {}

    def heartbeat(self, info: BrokerLive) -> None:
        self._brokers[(info.broker_name, info.broker_id)] = info

    def connection_closed(self, conn: object) -> list[str]:
        """Forget the brokers that heartbeated on `conn`; returns their groups."""
        gone = [key for key, info in self._brokers.items() if info.conn is conn]
        for key in gone:
            del self._brokers[key]
        return sorted({name for name, _ in gone})

    def alive(self, broker_name: str) -> dict[int, BrokerLive]:
        now = self._clock.now_ms()
        return {
            bid: info
            for (name, bid), info in self._brokers.items()
            if name == broker_name and info.alive(now)
        }

    def is_alive(self, broker_name: str, broker_id: int) -> bool:
        info = self._brokers.get((broker_name, broker_id))
        return info is not None and info.alive(self._clock.now_ms())

    def silence_ms(self, broker_name: str, broker_id: int) -> int | None:
        """Milliseconds since the broker's last heartbeat (None: not heard from, or its connection closed)."""
        info = self._brokers.get((broker_name, broker_id))
        return None if info is None else self._clock.now_ms() - info.last_ms

    def next_expiry_ms(self, masters: dict[str, int]) -> int | None:
        """When the first of these masters (group -> id) is due to be taken for dead, if it stays silent."""
        due = [
            info.last_ms + info.timeout_ms
            for (name, bid), info in self._brokers.items()
            if masters.get(name) == bid
        ]
        return min(due, default=None)

    def groups(self) -> set[str]:
        return {name for name, _ in self._brokers}
