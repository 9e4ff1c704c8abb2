"""`orbitmq bench codec`: throughput per CPU second of the record codec and the remoting wire path.

Timed with this process's CPU time, so a busy box changes the figures far less than wall-clock time
would; compare builds with ORBITMQ_PURE=1. What is timed: DESCRIPTION (the verb's --help).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence

from orbitmq import native
from orbitmq.message.codec import (
    decode_records,
    encode_properties,
    iter_record_spans,
    new_unique_id,
    pack_host,
    pack_record_into,
    record_size,
    scan_record,
    unpack_record_header,
)
from orbitmq.protocol.codes import RequestCode
from orbitmq.protocol.command import RemotingCommand, decode_command, encode_command
from orbitmq.protocol.frames import FrameDecoder

DESCRIPTION = """\
Codec throughput per CPU second: pack_record_into, decode_records, scan_record, iter_record_spans
and unpack_record_header (recovery's per-record read) with 1 KiB bodies, and the remoting wire path of
a SEND_MESSAGE_V2 request (FrameDecoder.feed + decode_command, encode_command of its response).
Run with `orbitmq bench codec [--count N] [--body B] [--runs R]`.

Timed with `time.process_time` (this process's CPU time), so a shared, busy box changes the figures
far less than wall-clock time would; compare compiled and pure builds with ORBITMQ_PURE=1.
`orbitmq --version` says which build runs.
"""


def best_of(runs: int, fn: Callable[[], int]) -> float:
    """Best records/s over `runs` runs of `fn` (which returns the number of records it handled)."""
    best = 0.0
    for _ in range(runs):
        start = time.process_time()
        count = fn()
        best = max(best, count / max(time.process_time() - start, 1e-9))
    return best


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="orbitmq bench codec", description=DESCRIPTION)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)

    count: int = args.count
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

    def headers() -> int:  # what recovery reads per record
        return sum(1 for pos, _ in iter_record_spans(buf) if unpack_record_header(buf, pos))

    request = RemotingCommand(
        RequestCode.SEND_MESSAGE_V2,
        ext_fields={
            "a": "bench-group",
            "b": "BenchmarkTopic",
            "c": "TBW102",
            "d": "4",
            "e": "3",
            "f": "0",
            "g": "1700000000000",
            "h": "0",
            "i": properties[0].decode(),
            "j": "0",
            "k": "false",
            "m": "false",
        },
        body=body,
    )
    # one receive chunk holding 16 whole frames, as a busy connection delivers them
    chunk = b"".join(b"".join(bytes(p) for p in encode_command(request)) for _ in range(16))
    response = RemotingCommand(
        0,
        ext_fields={"msgId": "0A0102040000000000000000", "queueId": "3", "queueOffset": "12345"},
    )

    def wire_in() -> int:
        decoder = FrameDecoder()
        n = 0
        for _ in range(count // 16):
            for frame in decoder.feed(chunk):
                decode_command(frame)
                n += 1
        return n

    def wire_out() -> int:
        for _ in range(count):
            encode_command(response)
        return count

    print(f"{count} records, {args.body} B bodies, {size / count:.0f} B/rec, best of {args.runs}, CPU time")
    print(f"build: {native.describe()}")
    for name, fn in (
        ("pack_record_into", pack),
        ("decode_records", decode),
        ("scan_record (crc)", scan),
        ("iter_record_spans", spans),
        ("unpack_record_header", headers),
        ("feed+decode_command", wire_in),
        ("encode_command (resp)", wire_out),
    ):
        rate = best_of(args.runs, fn)
        print(f"{name:20s} {rate:12,.0f} records/s  {rate * size / count / 1e6:8.1f} MB/s")


if __name__ == "__main__":
    main()
