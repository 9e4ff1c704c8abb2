"""Record codec throughput: records/s for pack_record_into, decode_records, scan_record and
iter_record_spans with 1 KiB bodies (a plain script; run `.venv/bin/python bench/codec_bench.py`)."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from orbitmq.message.codec import (
    decode_records,
    encode_properties,
    iter_record_spans,
    new_unique_id,
    pack_host,
    pack_record_into,
    record_size,
    scan_record,
)


def best_of(runs: int, fn: Callable[[], int]) -> float:
    """Best records/s over `runs` runs of `fn` (which returns the number of records it handled)."""
    best = 0.0
    for _ in range(runs):
        start = time.perf_counter()
        count = fn()
        best = max(best, count / (time.perf_counter() - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    count = args.count
    body = os.urandom(args.body)
    topic = b"BenchmarkTopic"
    born = pack_host("10.1.2.3", 51234)
    store = pack_host("10.1.2.4", 10911)
    properties = [
        encode_properties(
            {"TAGS": "TagA", "KEYS": f"order-{i}", "UNIQ_KEY": new_unique_id(), "WAIT": "true"}
        ).encode()
        for i in range(count)
    ]
    size = sum(record_size(len(body), len(topic), len(p)) for p in properties)
    buf = bytearray(size)

    def pack() -> int:
        pos = 0
        for i in range(count):
            pos += pack_record_into(
                buf,
                pos,
                queue_id=i & 7,
                flag=0,
                queue_offset=i,
                physical_offset=pos,
                sys_flag=0,
                born_timestamp=1_700_000_000_000,
                born_host=born,
                store_timestamp=1_700_000_000_001,
                store_host=store,
                reconsume_times=0,
                prepared_transaction_offset=0,
                body=body,
                topic=topic,
                properties=properties[i],
            )
        return count

    def decode() -> int:
        return len(decode_records(buf))

    def scan() -> int:
        pos = n = 0
        end = len(buf)
        while pos < end:
            pos += scan_record(buf, pos).size
            n += 1
        return n

    def spans() -> int:
        return sum(1 for _ in iter_record_spans(buf))

    print(f"{count} records, {args.body} B bodies, {size / count:.0f} B/record, best of {args.runs}")
    for name, fn in (
        ("pack_record_into", pack),
        ("decode_records", decode),
        ("scan_record (crc)", scan),
        ("iter_record_spans", spans),
    ):
        rate = best_of(args.runs, fn)
        print(f"{name:20s} {rate:12,.0f} records/s  {rate * size / count / 1e6:8.1f} MB/s")


if __name__ == "__main__":
    main()
