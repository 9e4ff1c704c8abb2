"""StoreStats: counters of puts and gets and the TPS figures derived from them (RocketMQ's
StoreStatsService, reduced to what runtime_info and the broker's stats report).

Counters are plain ints bumped by the single writer; `sample()` records a snapshot so TPS is computed
over the last window (the broker samples about once a second). Time comes from the injected Clock.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from orbitmq.common.clock import Clock

_WINDOW: Final = 60


class StoreStats:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.boot_timestamp = clock.now_ms()
        self.put_message_times_total = 0
        self.put_message_size_total = 0
        self.put_message_failed_times = 0
        self.get_message_times_total_found = 0
        self.get_message_times_total_miss = 0
        self.get_message_transfered_msg_count = 0
        self.dispatch_max_buffer = 0
        self._samples: deque[tuple[float, int, int, int, int]] = deque(maxlen=_WINDOW + 1)

    def sample(self) -> None:
        self._samples.append(
            (
                self.clock.monotonic(),
                self.put_message_times_total,
                self.get_message_times_total_found,
                self.get_message_times_total_miss,
                self.get_message_transfered_msg_count,
            )
        )

    def _tps(self, index: int, window: float = 10.0) -> float:
        if not self._samples:
            return 0.0
        now = (
            self.clock.monotonic(),
            self.put_message_times_total,
            self.get_message_times_total_found,
            self.get_message_times_total_miss,
            self.get_message_transfered_msg_count,
        )
        # The newest sample at least `window` seconds old (else the oldest): a window in time, not in
        # samples, since every runtime-info request adds a sample besides the broker's once a second.
        first = self._samples[0]
        for sample in reversed(self._samples):
            if now[0] - sample[0] >= window:
                first = sample
                break
        elapsed = now[0] - first[0]
        if elapsed <= 0:
            return 0.0
        return (now[index] - first[index]) / elapsed

    @property
    def put_tps(self) -> float:
        return self._tps(1)

    @property
    def get_found_tps(self) -> float:
        return self._tps(2)

    @property
    def get_miss_tps(self) -> float:
        return self._tps(3)

    @property
    def get_transfered_tps(self) -> float:
        return self._tps(4)

    def as_dict(self) -> dict[str, str]:
        found, miss = self.get_found_tps, self.get_miss_tps
        avg = (
            self.put_message_size_total / self.put_message_times_total if self.put_message_times_total else 0
        )
        return {
            "bootTimestamp": str(self.boot_timestamp),
            "putTps": f"{self.put_tps:.2f}",
            "getFoundTps": f"{found:.2f}",
            "getMissTps": f"{miss:.2f}",
            "getTotalTps": f"{found + miss:.2f}",
            "getTransferedTps": f"{self.get_transfered_tps:.2f}",
            "putMessageTimesTotal": str(self.put_message_times_total),
            "putMessageSizeTotal": str(self.put_message_size_total),
            "putMessageAverageSize": f"{avg:.2f}",
            "putMessageFailedTimes": str(self.put_message_failed_times),
            "getMessageTimesTotalFound": str(self.get_message_times_total_found),
            "getMessageTimesTotalMiss": str(self.get_message_times_total_miss),
            "getMessageTransferedMsgCount": str(self.get_message_transfered_msg_count),
            "dispatchMaxBuffer": str(self.dispatch_max_buffer),
        }
