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

    def groups(self) -> set[str]:
        return {name for name, _ in self._brokers}
